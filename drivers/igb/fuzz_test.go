package igb

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/xskapp"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
)

// FuzzRxWriteback feeds arbitrary write-backs (status, errors, length) to
// the RX path, with half-page buffers or a zero-copy socket: nothing
// panics, every completed descriptor is either a received frame or a
// counted drop, and closing leaves nothing mapped and no frame lost.
func FuzzRxWriteback(f *testing.F) {
	f.Add(false, []byte{0x03, 0, 0, 0, 0x40, 0})                        // one good frame
	f.Add(true, []byte{0x01, 0, 0, 0, 0x40, 0, 0x03, 0, 0, 0, 0x40, 0}) // no EOP then EOP
	f.Add(false, []byte{0x03, 0, 0, 0x01, 0x40, 0})                     // CE error
	f.Add(true, []byte{0x03, 0, 0, 0, 0xff, 0xff})                      // length 65535
	f.Add(false, []byte{0x03, 0, 0, 0x20, 0, 0})                        // L4 error, length 0
	f.Fuzz(func(t *testing.T, zc bool, wbs []byte) {
		r := newRig(t)
		var a *xskapp.App
		if zc {
			a = xskapp.New(t, 512, 512, 256)
			if err := r.d.Bind(0, a.S, xsk.ZeroCopy); err != nil {
				t.Fatal(err)
			}
		}
		q := r.d.queues[0]
		completed := 0
		for len(wbs) >= 6 && completed < 2*rxDescs {
			staterr := binary.LittleEndian.Uint32(wbs) | RXD_STAT_DD
			n := int(binary.LittleEndian.Uint16(wbs[4:]))
			wbs = wbs[6:]
			h := r.RxHead[0]
			if h == r.RxTail(0) {
				break
			}
			r.Writeback(0, h, staterr, n, 0)
			r.RxHead[0] = q.rx.Descs.Next(h)
			completed++
			if completed%16 == 0 || len(wbs) < 6 {
				nictest.Receive(q, 64, func(p *nic.RxPacket) { p.Data.Release() })
				if a != nil {
					a.Recycle(t)
				}
			}
		}
		sum := r.Stat(t, "rx_frames")
		for _, s := range []string{"rx_drop_error", "rx_drop_length", "rx_drop_multi", "rx_drop_dma"} {
			sum += r.Stat(t, s)
		}
		if sum != uint64(completed) {
			t.Fatalf("%d descriptors completed, %d frames and drops counted", completed, sum)
		}
		if a != nil {
			if err := r.d.Unbind(0); err != nil {
				t.Fatal(err)
			}
			a.Account(t, nil)
		}
		r.Close(t)
	})
}

// FuzzCtl: every ctl command applies or is refused, naming the driver,
// with the registers and the settings as they were.
func FuzzCtl(f *testing.F) {
	r := newRig(f)
	d := r.d
	nictest.FuzzCtl(f, d, "igb ether0", func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "mtu %d features %+v\n", d.MTU(), d.Features())
		for i, q := range d.queues {
			fmt.Fprintf(&b, "queue %d copybreak %d\n", i, q.rx.Copybreak())
		}
		return b.String() + r.regs.Snapshot()
	})
}
