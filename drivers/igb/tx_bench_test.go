package igb_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// BenchmarkTx: the transmit path on the 82576 model behind VT-d
// (testhost.BenchTx).
func BenchmarkTx(b *testing.B) {
	w := testhost.Wire(b, wire.Options{})
	h := newHost(b, w.A(), 1, false)
	defer h.Close(b)
	testhost.BenchTx(b, h.NIC, w.B(), "tso on")
}
