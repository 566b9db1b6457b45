package igb_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// TestSimSuite runs the checks every driver passes (testhost.Suite) on
// the 82576 model.
func TestSimSuite(t *testing.T) {
	host := func(nonCoherent bool, build func(testing.TB, *wire.End, byte, bool) *host) func(*testing.T, *wire.End, byte) testhost.Rig {
		return func(t *testing.T, end *wire.End, last byte) testhost.Rig { return build(t, end, last, nonCoherent) }
	}
	testhost.Suite{
		Variants: []testhost.Variant{
			{Name: "coherent", New: host(false, newHost)},
			{Name: "noncoherent", New: host(true, newHost)},
			{Name: "deferred", New: host(false, newDeferredHost)},
		},
		RxRing:  256,
		Stacked: 2,
		IRQ:     true,
		TxHost: func(t *testing.T, end *wire.End, tx testhost.TxMode) testhost.Rig {
			return newHostWith(t, end, 1, true, m82576.Options{DeferTx: tx.Defer, TxPerTouch: tx.PerTouch})
		},
	}.Run(t)
}
