package igc

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
)

// FuzzRxWriteback feeds arbitrary write-backs (status, errors, lengths up
// to 64 KiB, stray EOPs) under both layouts: the driver must never
// deliver more bytes than its buffer holds, never panic, keep its ring
// armed, and leave nothing mapped at close.
func FuzzRxWriteback(f *testing.F) {
	f.Add([]byte{0x03, 0, 0, 0, 64, 0}, false)
	f.Add([]byte{0x01, 0, 0, 0, 0xff, 0xff, 0x03, 0, 0, 0x01, 0x00, 0x08}, true)
	f.Add([]byte{0x03, 0, 0, 0x80, 0x40, 0x06}, false)
	f.Fuzz(func(t *testing.T, data []byte, construct bool) {
		r := newRig(t)
		defer r.Close(t)
		if construct {
			if err := r.d.Ctl("build off"); err != nil {
				t.Fatal(err)
			}
		}
		room := r.d.queues[0].rx.room()
		for len(data) >= 6 {
			staterr := binary.LittleEndian.Uint32(data) | adv.RXD_STAT_DD
			n := int(binary.LittleEndian.Uint16(data[4:]))
			data = data[6:]
			h := r.RxHead[0]
			if h == r.RxTail(0) {
				break
			}
			body := make([]byte, min(n, room))
			if len(body) >= 64 {
				body = udpFrame(len(body), byte(h))
			}
			if len(body) > 0 {
				if err := r.DMA.DeviceWrite(r.RxAddr(0), body); err != nil {
					t.Fatal(err)
				}
			}
			r.Writeback(0, h, staterr, n, 0)
			r.RxHead[0] = r.d.queues[0].rx.Descs.Next(h)
			nictest.Receive(r.d.queues[0], 4, func(p *nic.RxPacket) {
				if sz := int(p.Data.Size()); sz == 0 || sz > room || sz != n {
					t.Errorf("delivered %d bytes for a write-back of %d (room %d)", sz, n, room)
				}
				p.Data.Release()
			})
		}
		r.poll(0)
		if a := r.d.queues[0].rx.Armed(); a != rxDescs-1 {
			t.Fatalf("%d descriptors armed after the storm", a)
		}
	})
}

// FuzzCtl: every ctl command applies or is refused, naming the driver,
// with the registers and the settings as they were.
func FuzzCtl(f *testing.F) {
	r := newRig(f)
	d := r.d
	nictest.FuzzCtl(f, d, "igc ether0", func() string {
		return fmt.Sprintf("mtu %d features %+v build %v rss %v\n%s", d.MTU(), d.Features(), d.build.Load(), d.rss.Load(), r.regs.Snapshot())
	})
}
