package e1000e_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// TestSimSuite runs the checks every driver passes (testhost.Suite) on
// the 82574L and I219-LM models.
func TestSimSuite(t *testing.T) {
	host := func(pers m82574.Personality, nonCoherent, deferRx bool) func(*testing.T, *wire.End, byte) testhost.Rig {
		return func(t *testing.T, end *wire.End, last byte) testhost.Rig {
			return testhost.New(t, testhost.Options{Addr: machineAddr, NonCoherent: nonCoherent, End: end}, func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) {
				return m82574.Plug(m, a, m82574.Options{Personality: pers, MAC: [6]byte{0x02, 0, 0, 0, 0, last}, DeferRx: deferRx})
			})
		}
	}
	testhost.Suite{
		Variants: []testhost.Variant{
			{Name: "82574L", New: host(m82574.M82574L, false, false)},
			{Name: "82574L/noncoherent", New: host(m82574.M82574L, true, false)},
			{Name: "82574L/deferred", New: host(m82574.M82574L, false, true)},
			{Name: "I219-LM", New: host(m82574.I219LM, false, false), NoTSO: true},
		},
		RxRing:  256,
		Stacked: 2,
	}.Run(t)
}
