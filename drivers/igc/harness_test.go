package igc

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/advplay"
	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// regFile is the register file with an I225's side effects: CTRL.DEV_RST
// self-clears, ICR and the statistics clear on read, MDIC is always
// ready, and EERD answers from an NVM image (erased where it has none).
type regFile struct {
	*fakedev.File
	nvm []uint16
}

func newRegFile(status uint32) *regFile {
	f := &regFile{}
	f.File = fakedev.NewFile(map[uint32]uint32{adv.STATUS: status, adv.EECD: adv.EECD_AUTO_RD}, fakedev.Effects{
		ClearOnRead: func(off uint32) bool { return off == adv.ICR || off >= nicstat.CRCERRS && off <= nicstat.TSCTC },
		Write:       f.write,
	})
	return f
}

// withMAC loads m into RAL0/RAH0 as the hardware does from a good NVM.
func (f *regFile) withMAC(m [6]byte) *regFile {
	ral, rah := fakedev.ReceiveAddress(m)
	f.Set(adv.RAL0, ral)
	f.Set(adv.RAH0, rah)
	return f
}

func (f *regFile) write(r map[uint32]uint32, off, v uint32) {
	switch off {
	case adv.CTRL:
		v &^= CTRL_DEV_RST
	case adv.MDIC:
		v |= adv.MDIC_READY
	case EERD:
		w := int(v >> adv.EERD_ADDR_SHIFT & 0x3fff)
		d := uint16(0xffff) // erased flash
		if w < len(f.nvm) {
			d = f.nvm[w]
		}
		v = uint32(d)<<adv.EERD_DATA_SHIFT | adv.EERD_DONE
	}
	r[off] = v
}

var testMAC = [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}

// status2500 is STATUS of a full-duplex 2.5 Gb/s link.
const status2500 = adv.STATUS_LU | adv.STATUS_FD | 2<<adv.STATUS_SPEED_SHIFT | STATUS_SPEED_2500

// rssHash is the hash the rig's device writes back with every frame.
const rssHash = 0x1234

// rig is a probed driver over the register file, the test playing the
// device's queues.
type rig struct {
	*advplay.Device
	nictest.Unit
	d    *Device
	regs *regFile
}

func probeOn(regs *regFile, dma kernel.DMA, device uint16) (*Device, error) {
	return probe(deviceOn(regs, dma, device))
}

// deviceOn is what a probe of device id device at regs over dma gets.
func deviceOn(regs *regFile, dma kernel.DMA, device uint16) *nic.Device {
	return &nic.Device{
		Name:  "ether0",
		Func:  &pci.Function{Addr: pci.Addr{Bus: 3, Dev: 0, Fn: 0}, Vendor: VendorIntel, Device: device},
		Regs:  regs,
		DMA:   dma,
		Clock: sim.NewClock(),
	}
}

func newRig(t testing.TB) *rig {
	dma := fakedev.NewDMA()
	r := newRigOn(t, dma, dma)
	r.DMA = dma
	return r
}

// newRigOn probes over any DMA, mem being its device side.
func newRigOn(t testing.TB, dma kernel.DMA, mem advplay.Mem) *rig {
	t.Helper()
	regs := newRegFile(status2500).withMAC(testMAC)
	d, err := probeOn(regs, dma, 0x15f3)
	if err != nil {
		t.Fatal(err)
	}
	rings := func(q int) (rx, tx *ring.Descs) { return d.queues[q].rx.Descs, d.queues[q].Tx.Descs }
	return &rig{Device: advplay.New(regs, mem, len(d.queues), rings), Unit: nictest.Unit{NIC: d}, d: d, regs: regs}
}

// poll cleans queue q and returns the delivered packets' bytes.
func (r *rig) poll(q int) (out [][]byte) {
	nictest.Receive(r.d.queues[q], rxDescs, func(p *nic.RxPacket) {
		out = append(out, p.Data.Flatten())
		p.Data.Release()
	})
	return out
}

// udpFrame is an n-byte Ethernet/IPv4/UDP frame whose bytes count from
// seed, headers filled in so that header parsing sees UDP.
func udpFrame(n int, seed byte) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = seed + byte(i)
	}
	copy(f[0:6], testMAC[:])
	binary.BigEndian.PutUint16(f[12:], 0x0800) // IPv4
	f[14] = 0x45
	binary.BigEndian.PutUint16(f[16:], uint16(n-14))
	binary.BigEndian.PutUint16(f[20:], 0) // not a fragment
	f[23] = 17
	return f
}
