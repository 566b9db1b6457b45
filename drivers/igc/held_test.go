package igc

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
)

// TestHeldPacketsUnchanged: in the construct layout, packets the stack
// holds while the ring receives several rings' worth more keep their
// bytes, and once they are released closing leaves nothing mapped. The
// rest of a constructed packet is a view of its half page; fails if a
// slot re-arms a half the stack still holds (a page whose other half is
// held must be given up, not flipped or kept). The build layout's check
// is TestBuildReturnsThroughEndpoint.
func TestHeldPacketsUnchanged(t *testing.T) {
	r := newRig(t)
	if err := r.d.Ctl("build off"); err != nil {
		t.Fatal(err)
	}
	r.RestartRx(0)
	q := r.d.queues[0]
	nictest.HeldRx{
		Ring: rxDescs,
		Send: func(t testing.TB, f []byte) bool { return r.Deliver(t, 0, f, adv.RXD_STAT_EOP, rssHash) },
		Receive: func(_ testing.TB, budget int, got func(nictest.Packet)) int {
			return nictest.Receive(q, budget, func(p *nic.RxPacket) { got(nictest.RxPacket(p)) })
		},
		Frame: func(i int) []byte { return heldFrame(1000, i) },
		Close: func(t testing.TB) {
			if n := r.Stat(t, "rx_page_released"); n == 0 {
				t.Error("no page given up while the stack held both its halves")
			}
			r.Close(t)
		},
	}.Check(t)
}

// heldFrame is the i-th n-byte UDP frame of a held-packet run, its index
// in the last payload bytes so that no two frames are alike.
func heldFrame(n, i int) []byte {
	f := udpFrame(n, byte(i))
	binary.BigEndian.PutUint32(f[n-4:], uint32(i))
	return f
}
