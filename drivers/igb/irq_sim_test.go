package igb_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// The legacy INTx path on the 82576 model, every queue on the one line
// (testhost.CheckIRQ). Frames for queue q go to UDP port 9000+q, which a
// port filter steers there. With DeferRx a frame waits in the model's
// packet buffer until its queue is touched; its interrupt must name that
// queue, or the sleeper would wake for nothing and sleep through it.
func TestSimIRQ(t *testing.T) {
	for _, deferRx := range []bool{false, true} {
		t.Run(map[bool]string{false: "arrival", true: "deferred"}[deferRx], func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{})
			h := newHostWith(t, w.A(), 1, false, m82576.Options{DeferRx: deferRx})
			defer h.Finish(t)
			for q := range h.NIC.Queues() {
				if _, err := h.dev.Steer(xsk.Filter{UDPPort: uint16(9000 + q)}, q); err != nil {
					t.Fatal(err)
				}
			}
			testhost.CheckIRQ(t, testhost.IRQRig{
				Machine: h.Machine, Addr: pci.Addr{Dev: 3}, NIC: h.NIC,
				Send: func(q int) { w.B().Send(testhost.UDPFrame(h.NIC.MAC(), uint16(9000+q), 64, 0)) },
			})
		})
	}
}
