package e1000e

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// regFile is the register file with an 82574's side effects: CTRL.RST
// resets it, ICR and the statistics clear on read, ICS sets causes in
// ICR, and EERD answers from an NVM image.
type regFile struct {
	*fakedev.File
	nvm []uint16
}

func newRegFile(status uint32, mac [6]byte) *regFile {
	f := &regFile{nvm: []uint16{uint16(mac[0]) | uint16(mac[1])<<8, uint16(mac[2]) | uint16(mac[3])<<8, uint16(mac[4]) | uint16(mac[5])<<8}}
	init := map[uint32]uint32{STATUS: status, EECD: EECD_AUTO_RD}
	// Hardware loads the first receive address from the NVM at reset.
	if mac != [6]byte{} {
		init[RAL0], init[RAH0] = fakedev.ReceiveAddress(mac)
	}
	f.File = fakedev.NewFile(init, fakedev.Effects{
		ClearOnRead: func(off uint32) bool { return off == ICR || off >= nicstat.CRCERRS && off <= nicstat.TSCTFC },
		Write:       f.write,
	})
	return f
}

func (f *regFile) write(r map[uint32]uint32, off, v uint32) {
	switch off {
	case CTRL:
		if v&CTRL_RST != 0 {
			f.reset(r)
		}
		v &^= CTRL_RST
	case EERD:
		if v&EERD_START != 0 {
			w := int(v >> EERD_ADDR_SHIFT & 0x3fff)
			var data uint16
			if w < len(f.nvm) {
				data = f.nvm[w]
			}
			v = uint32(data)<<EERD_DATA_SHIFT | EERD_DONE
		}
	case ICS:
		r[ICR] |= v
		return
	}
	r[off] = v
}

// reset is CTRL.RST: every register back to zero but STATUS (the link)
// and EECD, the station address reloaded from the NVM.
func (f *regFile) reset(r map[uint32]uint32) {
	status, eecd := r[STATUS], r[EECD]
	clear(r)
	r[STATUS], r[EECD] = status, eecd
	if len(f.nvm) >= 3 && (f.nvm[0] != 0 || f.nvm[1] != 0 || f.nvm[2] != 0) {
		r[RAL0] = uint32(f.nvm[0]) | uint32(f.nvm[1])<<16
		r[RAH0] = uint32(f.nvm[2]) | RAH_AV
	}
}

const status1000 = STATUS_LU | STATUS_FD | 2<<STATUS_SPEED_SHIFT

var testMAC = [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}

type rig struct {
	nictest.Unit
	d    *Device
	regs *regFile
}

func newRig(t testing.TB, device uint16) *rig {
	t.Helper()
	regs := newRegFile(status1000, testMAC)
	dma := fakedev.NewDMA()
	d, err := probe(&nic.Device{
		Name:  "ether0",
		Func:  &pci.Function{Vendor: VendorIntel, Device: device},
		Regs:  regs,
		DMA:   dma,
		Clock: sim.NewClock(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{Unit: nictest.Unit{NIC: d, DMA: dma}, d: d, regs: regs}
}

// rxAddr reads the buffer address armed in RX descriptor i.
func (r *rig) rxAddr(i int) kernel.DMAAddr {
	return kernel.DMAAddr(binary.LittleEndian.Uint64(r.d.q.rx.Descs.At(i)))
}

// complete plays the device: writes payload into descriptor i's buffer and
// the write-back with staterr and length.
func (r *rig) complete(t testing.TB, i int, payload []byte, staterr uint32, length int) {
	t.Helper()
	if len(payload) > 0 {
		if err := r.DMA.DeviceWrite(r.rxAddr(i), payload); err != nil {
			t.Fatal(err)
		}
	}
	d := r.d.q.rx.Descs.At(i)
	binary.LittleEndian.PutUint32(d[8:], staterr)
	binary.LittleEndian.PutUint16(d[12:], uint16(length))
}

func (r *rig) poll() []*nic.RxPacket {
	var got []*nic.RxPacket
	nictest.Receive(&r.d.q, 64, func(p *nic.RxPacket) { got = append(got, p) })
	return got
}

// pollOne polls and checks that exactly want arrived, then releases it.
func (r *rig) pollOne(t testing.TB, want []byte, when string) {
	t.Helper()
	got := r.poll()
	if len(got) != 1 || !bytes.Equal(got[0].Data.Flatten(), want) {
		t.Fatalf("%s: %d frames, or not the one sent", when, len(got))
	}
	got[0].Data.Release()
}
