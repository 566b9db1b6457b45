package igb

import (
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/advplay"
	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// regFile is the register file with an 82576's side effects: CTRL.RST
// self-clears, ICR and the statistics clear on read, and MDIC reaches PHY
// registers that are plain storage, always ready.
type regFile struct {
	*fakedev.File
	phy [32]uint16
}

func newRegFile(mac [6]byte) *regFile {
	init := map[uint32]uint32{
		adv.STATUS: adv.STATUS_LU | adv.STATUS_FD | 2<<adv.STATUS_SPEED_SHIFT,
		adv.EECD:   adv.EECD_AUTO_RD,
	}
	init[adv.RAL0], init[adv.RAH0] = fakedev.ReceiveAddress(mac)
	f := &regFile{}
	f.File = fakedev.NewFile(init, fakedev.Effects{
		ClearOnRead: func(off uint32) bool { return off == adv.ICR || off >= CRCERRS && off <= TSCTFC },
		Write:       f.write,
	})
	return f
}

func (f *regFile) write(r map[uint32]uint32, off, v uint32) {
	switch off {
	case adv.CTRL:
		v &^= adv.CTRL_RST
	case adv.MDIC:
		reg := v >> adv.MDIC_REG_SHIFT & 0x1f
		if v&adv.MDIC_OP_WRITE != 0 {
			f.phy[reg] = uint16(v)
		} else {
			v = v&^adv.MDIC_DATA_MASK | uint32(f.phy[reg])
		}
		v |= adv.MDIC_READY
	}
	r[off] = v
}

var testMAC = [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}

// rig is a probed driver over the register file, the test playing the
// device's queues.
type rig struct {
	*advplay.Device
	nictest.Unit
	d    *Device
	regs *regFile
}

func newRig(t testing.TB) *rig {
	dma := fakedev.NewDMA()
	r := newRigOn(t, dma, dma)
	r.DMA = dma
	return r
}

// probeOn probes an 82576 at regs over dma, asking for at most queues
// queue pairs (0: the driver's count).
func probeOn(regs *regFile, dma kernel.DMA, queues int) (*Device, error) {
	return probe(&nic.Device{
		Name:   "ether0",
		Func:   &pci.Function{Vendor: VendorIntel, Device: 0x10c9},
		Regs:   regs,
		DMA:    dma,
		Clock:  sim.NewClock(),
		Queues: queues,
	})
}

// probePairs probes an 82576 over fresh registers and DMA, asking for at
// most pairs queue pairs.
func probePairs(pairs int) (*regFile, *Device, error) {
	regs := newRegFile(testMAC)
	d, err := probeOn(regs, fakedev.NewDMA(), pairs)
	return regs, d, err
}

// newRigOn probes over any DMA, mem being its device side.
func newRigOn(t testing.TB, dma kernel.DMA, mem advplay.Mem) *rig {
	t.Helper()
	regs := newRegFile(testMAC)
	d, err := probeOn(regs, dma, 0)
	if err != nil {
		t.Fatal(err)
	}
	rings := func(q int) (rx, tx *ring.Descs) { return d.queues[q].rx.Descs, d.queues[q].Tx.Descs }
	return &rig{Device: advplay.New(regs, mem, len(d.queues), rings), Unit: nictest.Unit{NIC: d}, d: d, regs: regs}
}

// frame builds an n-byte frame to the NIC with a recognisable body.
func frame(n int, seed byte) []byte {
	f := make([]byte, n)
	copy(f, testMAC[:])
	copy(f[6:], []byte{0x02, 0, 0, 0, 0, 9})
	f[12], f[13] = 0x88, 0xb5
	for i := 14; i < n; i++ {
		f[i] = seed + byte(i)
	}
	return f
}
