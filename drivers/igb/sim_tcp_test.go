package igb_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
)

// TCP between two machines: several connections spread over the RSS
// queues, every byte checked, no fault, nothing left mapped. The models
// defer receive DMA (DeferRx): a frame lands in its queue's ring when
// that queue's poll loop re-arms its interrupt vector before sleeping, so
// descriptor writes and reads are ordered on one goroutine, as interrupts
// order them on real hardware, and the test runs under -race.
func TestSimTCPOverRSSQueues(t *testing.T) {
	addrA, addrB := netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("10.0.0.2/24")
	for _, tx := range testhost.TxModes {
		for _, nc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/noncoherent=%v", tx.Name, nc), func(t *testing.T) {
				tx.SkipRacy(t)
				w := testhost.Wire(t, wire.Options{})
				opt := m82576.Options{DeferRx: true, DeferTx: tx.Defer, TxPerTouch: tx.PerTouch}
				a := newHostWith(t, w.A(), 1, nc, opt)
				b := newHostWith(t, w.B(), 2, nc, opt)
				a.Up(t, addrA, netstack.Options{})
				b.Up(t, addrB, netstack.Options{})
				const conns, size = 8, 256 << 10
				testhost.TCPConns(t, b.Stack, a.Stack, addrA.Addr(), conns, size)
				if rx := a.Stat(t, "rx_bytes"); rx < conns*size {
					t.Errorf("receiver counted %d bytes, sent %d", rx, conns*size)
				}
				testhost.CheckQueuesSpread(t, a.NIC)
				if a.Stat(t, "tx_tso")+b.Stat(t, "tx_tso") == 0 {
					t.Error("no TSO packet sent")
				}
				a.Finish(t)
				b.Finish(t)
			})
		}
	}
}
