package igc_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// BenchmarkTx: the transmit path on the I225 model behind VT-d
// (testhost.BenchTx).
func BenchmarkTx(b *testing.B) {
	w := testhost.Wire(b, wire.Options{SpeedMbps: 2500})
	h := testhost.New(b, testhost.Options{Addr: pci.Addr{Dev: 3}, End: w.A()}, func(m *sim.Machine, a pci.Addr) (*mi225.NIC, error) {
		return mi225.Plug(m, a, mi225.Options{Device: 0x15f3, MAC: [6]byte{0x02, 0, 0, 0, 0, 1}})
	})
	defer h.Close(b)
	testhost.BenchTx(b, h.NIC, w.B(), "tso on")
}
