package igc_test

import (
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
)

// TestSimSuite runs the checks every driver passes (testhost.Suite) on
// the I225 and I226 models, with frames built into their buffers and,
// with "build off", constructed.
func TestSimSuite(t *testing.T) {
	host := func(device uint16, nonCoherent bool, build string) func(*testing.T, *wire.End, byte) testhost.Rig {
		return func(t *testing.T, end *wire.End, last byte) testhost.Rig {
			h := newHost(t, end, last, netip.Prefix{}, device, nonCoherent)
			if err := h.NIC.Ctl("build " + build); err != nil {
				t.Fatal(err)
			}
			return h
		}
	}
	testhost.Suite{
		Wire: wire.Options{SpeedMbps: 2500},
		Variants: []testhost.Variant{
			{Name: "I225-LM", New: host(0x15f2, false, "auto")},
			{Name: "I225-LM/noncoherent", New: host(0x15f2, true, "auto")},
			{Name: "I225-LM/construct", New: host(0x15f2, false, "off")},
			{Name: "I226-LM", New: host(0x125b, false, "auto")},
		},
		RxRing: 256,
		// No spinning: with DeferRx a frame lands when its queue's loop
		// re-arms the vector, which a loop polling the ring never does.
		Stack: netstack.Options{Spin: -1},
	}.Run(t)
}
