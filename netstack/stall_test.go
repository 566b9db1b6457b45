package netstack_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/internal/transfer"
	"github.com/ether9/ether9/netstack"
)

// A transfer whose receiver stops taking frames fails within the stall
// limit, and says so with both stacks' counters, instead of waiting for
// the test binary's timeout.
func TestTransferStallFailsFast(t *testing.T) {
	p := newFakePair(t, netstack.Options{})
	const limit = 500 * time.Millisecond
	start := time.Now()
	err := transfer.TCP(p.sa, p.sb, addrB.Addr(), 64<<20, transfer.Options{
		Midway:     p.b.q.pause,
		StallAfter: limit,
		Diag:       func() string { return "fake wire: receiver paused\n" },
	})
	if !errors.Is(err, transfer.ErrStalled) {
		t.Fatalf("transfer into a paused receiver: %v, want %v", err, transfer.ErrStalled)
	}
	// Not a speed check: only that it did not wait for anything like a
	// test timeout.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the stall took %v to report", d)
	}
	for _, want := range []string{"stack 0 ether0 endpoint:", "stack 1 ether0 driver:", "tx_packets=", "fake wire: receiver paused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("stall report lacks %q:\n%v", want, err)
		}
	}
	p.b.q.resume()
}
