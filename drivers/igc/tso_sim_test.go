package igc_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/gsotest"
	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// TestSimTSOOnTheWire: a GSO packet is cut by the I225 model from the
// driver's TSO context, and with "tso off" by the driver in software;
// either way the wire carries full-MSS segments but the last, with the
// headers, checksums and stream whole. Fails if the driver programs or
// cuts at less than the packet's MSS.
func TestSimTSOOnTheWire(t *testing.T) {
	for _, nc := range []bool{false, true} {
		t.Run(fmt.Sprintf("noncoherent=%v", nc), func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{SpeedMbps: 2500})
			peer := testhost.NewPeer(w.B())
			h := newHost(t, w.A(), 1, netip.Prefix{}, 0x15f3, nc)
			q := h.NIC.Queues()[0]
			for _, tc := range []struct{ ctl, stat string }{{"tso on", "tx_tso"}, {"tso off", "tx_soft_gso"}} {
				if err := h.NIC.Ctl(tc.ctl); err != nil {
					t.Fatal(err)
				}
				for _, v6 := range []bool{false, true} {
					before := h.Stat(t, tc.stat)
					gsotest.Transmit(t, q, peer, v6, 5000, 20000)
					if got := h.Stat(t, tc.stat) - before; got != 1 {
						t.Errorf("%s, v6 %v: %s moved by %d, want 1", tc.ctl, v6, tc.stat, got)
					}
				}
			}
			h.close(t)
		})
	}
}
