package igb

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
)

// TestHeldPacketsUnchanged: packets the stack holds while the ring
// receives several rings' worth more keep their bytes, and once they are
// released closing leaves nothing mapped. A held packet keeps its half
// page; fails if a slot re-arms a half the stack still holds (a page
// whose other half is held must be given up, not flipped or kept).
func TestHeldPacketsUnchanged(t *testing.T) {
	r := newRig(t)
	q := r.d.queues[0]
	nictest.HeldRx{
		Ring: rxDescs,
		Send: func(t testing.TB, f []byte) bool { return r.Deliver(t, 0, f, RXD_STAT_EOP, 0) },
		Receive: func(_ testing.TB, budget int, got func(nictest.Packet)) int {
			return nictest.Receive(q, budget, func(p *nic.RxPacket) { got(nictest.RxPacket(p)) })
		},
		Frame: heldFrame,
		Close: func(t testing.TB) {
			if h, f := r.Stat(t, "rx_handoff"), r.Stat(t, "rx_frames"); h != f || f == 0 {
				t.Errorf("%d of %d frames handed up, want every one", h, f)
			}
			if n := r.Stat(t, "rx_page_released"); n == 0 {
				t.Error("no page given up while the stack held both its halves")
			}
			r.Close(t)
		},
	}.Check(t)
}

// heldFrame is the i-th frame of a held-packet run: 1000 bytes (above
// copybreak), its index in the first payload bytes so that no two frames
// are alike.
func heldFrame(i int) []byte {
	f := frame(1000, byte(i))
	binary.BigEndian.PutUint32(f[14:], uint32(i))
	return f
}
