package igc_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// TestSimMSIX runs the MSI-X checks on the I225 model with the machine's
// vectors, its receive DMA at once and deferred to the driver's
// goroutine.
func TestSimMSIX(t *testing.T) {
	for _, deferRx := range []bool{false, true} {
		name := map[bool]string{false: "direct", true: "deferred"}[deferRx]
		t.Run(name, func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{})
			h := testhost.New(t, testhost.Options{Addr: pci.Addr{Dev: 3}, End: w.A(), MSIX: true}, func(m *sim.Machine, a pci.Addr) (*mi225.NIC, error) {
				return mi225.Plug(m, a, mi225.Options{MAC: [6]byte{0x02, 0, 0, 0, 0, 1}, DeferRx: deferRx})
			})
			testhost.CheckMSIX(t, testhost.MSIXRig{
				Node: &h.Node, Wire: w,
				Send: func(q int) { w.B().Send(testhost.UDPFrame(h.NIC.MAC(), uint16(9000+q), 64, 0)) },
			})
			h.Finish(t)
		})
	}
}
