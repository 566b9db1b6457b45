package e1000e_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// BenchmarkTx: the transmit path on the 82574L model behind VT-d
// (testhost.BenchTx).
func BenchmarkTx(b *testing.B) {
	w := testhost.Wire(b, wire.Options{})
	h := testhost.New(b, testhost.Options{Addr: machineAddr, Polling: true, End: w.A()}, func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) {
		return m82574.Plug(m, a, m82574.Options{MAC: [6]byte{0x02, 0, 0, 0, 0, 1}})
	})
	defer h.Close(b)
	testhost.BenchTx(b, h.NIC, w.B(), "tso on")
}
