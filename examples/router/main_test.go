package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/internal/simtest"
	"github.com/ether9/ether9/internal/transfer"
	"github.com/ether9/ether9/netstack"
)

// Two hosts on two wires, an e1000e on one side and an igc on the
// other, exchange TCP through the machine, IPv4 and IPv6, checked by
// SHA-256; without forwarding they could not reach each other. Under the
// race detector it also guards the forwarded IPv4 header's lifetime
// (netstack's forwardHold): without it, the TTL is read from a chunk
// gVisor's pool has handed on.
func TestSimRouteBetweenTwoNICs(t *testing.T) {
	h, con := simtest.Run(t, config, route, "e1000e", "igc")
	con.WaitFor(t, "router: forwarding nics=2")
	a := &netstack.Stack{Stack: h.Peers[0].Stack}
	b := &netstack.Stack{Stack: h.Peers[1].Stack}
	_, nearSide := simmachine.Addrs(0)
	_, farSide := simmachine.Addrs(1)
	// A transfer fails when it stops moving; one that only crawls (every
	// segment lost but the retransmitted ones) is stopped here, with the
	// router's counters to say why.
	done := make(chan error, 1)
	go func() {
		for _, dst := range farSide {
			if err := transfer.TCP(a, b, dst.Addr(), 1<<20, transfer.Options{}); err != nil {
				done <- fmt.Errorf("A to B at %v: %w", dst.Addr(), err)
				return
			}
		}
		if err := transfer.TCP(b, a, nearSide[0].Addr(), 1<<20, transfer.Options{}); err != nil {
			done <- fmt.Errorf("B to A: %w", err)
			return
		}
		done <- nil
	}()
	stats := func() string {
		s, err := h.System.Namespace().ReadFile("/router/stats")
		if err != nil {
			return err.Error()
		}
		return s
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%v\n/router/stats:\n%s", err, stats())
		}
	case <-time.After(3 * simtest.Wait):
		t.Fatalf("3 MiB through the router took over %v\n/router/stats:\n%s", 3*simtest.Wait, stats())
	}
	t.Logf("/router/stats:\n%s", stats())
}
