package igb

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
)

// TestHeldPacketsUnchanged: packets the stack holds while the ring
// receives several rings' worth more keep their bytes, whether they went
// up handed off or copied, and once they are
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
			// Every frame went up handed off or, in the copy periods
			// the give-ups start (ring.PageRxRing's holdoff), copied.
			h, c, f := r.Stat(t, "rx_handoff"), r.Stat(t, "rx_copybreak"), r.Stat(t, "rx_frames")
			if h+c != f || h < rxDescs {
				t.Errorf("%d handed up and %d copied of %d frames, want all and a ring's worth handed up", h, c, f)
			}
			if n, p := r.Stat(t, "rx_page_released"), r.Stat(t, "rx_page_holdoffs"); n == 0 || p != n {
				t.Errorf("%d pages given up while the stack held both their halves, %d copy periods started: want some, one each", n, p)
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
