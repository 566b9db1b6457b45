package igc_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// TestSimInjectUnmappedRx: a frame the I225 model wrote into an unmapped
// IOVA, its descriptor still written back done, is dropped and counted,
// not delivered with what the buffer held before; the ring carries on
// (testhost.CheckInjectUnmappedRx), built into or constructed from.
func TestSimInjectUnmappedRx(t *testing.T) {
	for _, c := range []struct {
		build string
		nc    bool
	}{{"auto", false}, {"off", false}, {"auto", true}} {
		t.Run(fmt.Sprintf("build=%s/noncoherent=%v", c.build, c.nc), func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{})
			h := newHost(t, w.A(), 1, netip.Prefix{}, 0x15f2, c.nc)
			if err := h.NIC.Ctl("build " + c.build); err != nil {
				t.Fatal(err)
			}
			h.CheckInjectUnmappedRx(t, 256, w.B().Send) // the driver's ring size
		})
	}
}
