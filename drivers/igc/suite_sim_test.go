package igc_test

import (
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
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
			// Without DeferRx the model writes a frame into its ring as
			// it arrives, so a frame can land between a queue's last
			// empty poll and its sleep.
			{Name: "I225-V/arrival", New: func(t *testing.T, end *wire.End, last byte) testhost.Rig {
				return testhost.New(t, testhost.Options{Addr: pci.Addr{Dev: 3}, End: end}, func(m *sim.Machine, a pci.Addr) (*mi225.NIC, error) {
					return mi225.Plug(m, a, mi225.Options{Device: 0x15f3, MAC: [6]byte{0x02, 0, 0, 0, 0, last}})
				})
			}},
		},
		RxRing: 256,
		// No spinning: with DeferRx a frame lands when its queue's loop
		// re-arms the vector, which a loop polling the ring never does.
		Stack: netstack.Options{Spin: -1},
		IRQ:   true,
		TxHost: func(t *testing.T, end *wire.End, tx testhost.TxMode) testhost.Rig {
			return newHostTx(t, end, 1, netip.Prefix{}, 0x15f3, true, tx)
		},
	}.Run(t)
}
