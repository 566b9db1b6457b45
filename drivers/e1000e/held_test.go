package e1000e

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
)

// TestHeldPacketsUnchanged: packets the stack holds while the ring
// receives several rings' worth more keep their bytes, in both copybreak
// modes, and once they are released closing leaves nothing mapped. A
// frame handed up takes its buffer with it and the slot gets a fresh
// one; fails if the slot keeps and re-arms the buffer a held packet
// still reads.
func TestHeldPacketsUnchanged(t *testing.T) {
	for _, mode := range []string{"sync", "unmap"} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t, 0x10D3)
			for _, c := range []string{"copybreak 0", "copybreak-mode " + mode} {
				if err := r.d.Ctl(c); err != nil {
					t.Fatal(err)
				}
			}
			head := 0 // the device's next descriptor
			nictest.HeldRx{
				Ring: rxDescs,
				Send: func(t testing.TB, f []byte) bool {
					if head == int(r.regs.Get(RDT)) {
						return false
					}
					r.complete(t, head, f, RXD_STAT_DD|RXD_STAT_EOP, len(f))
					head = r.d.q.rx.Descs.Next(head)
					return true
				},
				Receive: func(_ testing.TB, budget int, got func(nictest.Packet)) int {
					return nictest.Receive(&r.d.q, budget, func(p *nic.RxPacket) { got(nictest.RxPacket(p)) })
				},
				Frame: heldFrame,
				Close: func(t testing.TB) {
					if h, f := r.Stat(t, "rx_handoff"), r.Stat(t, "rx_frames"); h != f || f == 0 {
						t.Errorf("%d of %d frames handed up, want every one", h, f)
					}
					r.Close(t)
				},
			}.Check(t)
		})
	}
}

// heldFrame is the i-th frame of a held-packet run: 1000 bytes, its
// index in the first payload bytes so that no two frames are alike.
func heldFrame(i int) []byte {
	f := make([]byte, 1000)
	copy(f, testMAC[:])
	copy(f[6:], []byte{0x02, 0, 0, 0, 0, 9})
	binary.BigEndian.PutUint16(f[12:], 0x88b5)
	for k := 14; k < len(f); k++ {
		f[k] = byte(i + k)
	}
	binary.BigEndian.PutUint32(f[14:], uint32(i))
	return f
}
