package igc_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/igc"
	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// The legacy INTx path on the I225 model, every queue on the one line
// (testhost.CheckIRQ). Without DeferRx the model writes a frame into its
// ring as it arrives, so a frame can land between the last empty poll
// and the sleep; with it the frame waits in the packet buffer until its
// queue is touched, and its interrupt must name that queue. Frames for
// queue q go to UDP port 9000+q, which a port filter steers there.
func TestSimIRQ(t *testing.T) {
	for _, deferRx := range []bool{false, true} {
		t.Run(map[bool]string{false: "arrival", true: "deferred"}[deferRx], func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{})
			a := pci.Addr{Dev: 3}
			h := testhost.New(t, testhost.Options{Addr: a, End: w.A()}, func(m *sim.Machine, a pci.Addr) (*mi225.NIC, error) {
				return mi225.Plug(m, a, mi225.Options{Device: 0x15f3, MAC: [6]byte{0x02, 0, 0, 0, 0, 1}, DeferRx: deferRx})
			})
			defer h.CheckNoLeaks(t)
			defer h.CheckNoFaults(t)
			defer h.Close(t)
			d := h.NIC.(*igc.Device)
			for q := range h.NIC.Queues() {
				if _, err := d.Steer(xsk.Filter{UDPPort: uint16(9000 + q)}, q); err != nil {
					t.Fatal(err)
				}
			}
			testhost.CheckIRQ(t, testhost.IRQRig{
				Machine: h.Machine, Addr: a, NIC: h.NIC,
				Send: func(q int) { w.B().Send(testhost.UDPFrame(h.NIC.MAC(), uint16(9000+q), 64, 0)) },
			})
		})
	}
}
