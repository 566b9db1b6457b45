package igc

import (
	"fmt"
	"github.com/ether9/ether9/drivers/advregs"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/pci"
)

// Reset timing (I225 datasheet 4.3): registers are usable about 1 ms after
// a device reset; the NVM auto-read finishes within 10 ms.
const (
	resetSettle     = time.Millisecond
	masterTimeout   = 10 * time.Millisecond
	resetTimeout    = 100 * time.Millisecond
	autoReadTimeout = 20 * time.Millisecond
	queueTimeout    = 10 * time.Millisecond
	pollStep        = 50 * time.Microsecond
	nvmWordsMAC     = 3
)

// waitFor polls cond every pollStep of clock time until it holds or
// timeout passes.
func (d *Device) waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := d.clock.Now() + timeout
	for !cond() {
		if d.clock.Now() >= deadline {
			return cond()
		}
		d.clock.Sleep(pollStep)
	}
	return true
}

// reset quiesces DMA and resets the device: masks interrupts, stops RX and
// TX, waits for outstanding master requests, then CTRL.DEV_RST.
func (d *Device) reset() error {
	r := d.regs
	if v := r.Read32(advregs.STATUS); v == 0xffffffff {
		return fmt.Errorf("igc %s: STATUS reads all ones: device not responding", d.name)
	}
	r.Write32(advregs.IMC, 0xffffffff)
	r.Write32(advregs.EIMC, 0xffffffff)
	r.Write32(advregs.RCTL, 0)
	r.Write32(advregs.TCTL, advregs.TCTL_PSP)
	r.Read32(advregs.STATUS)
	d.clock.Sleep(10 * time.Millisecond)

	r.Write32(advregs.CTRL, r.Read32(advregs.CTRL)|advregs.CTRL_GIO_MASTER)
	if !d.waitFor(masterTimeout, func() bool { return r.Read32(advregs.STATUS)&advregs.STATUS_GIO_MASTER == 0 }) {
		d.logf("%s: GIO master requests still pending at reset", d.name)
	}
	r.Write32(advregs.CTRL, r.Read32(advregs.CTRL)|CTRL_DEV_RST)
	d.clock.Sleep(resetSettle)
	if !d.waitFor(resetTimeout, func() bool { return r.Read32(advregs.CTRL)&CTRL_DEV_RST == 0 }) {
		return fmt.Errorf("igc %s: CTRL.DEV_RST did not clear within %v", d.name, resetTimeout)
	}
	if !d.waitFor(autoReadTimeout, func() bool { return r.Read32(advregs.EECD)&advregs.EECD_AUTO_RD != 0 }) {
		d.logf("%s: NVM auto-read not done after reset", d.name)
	}
	r.Write32(advregs.IMC, 0xffffffff)
	r.Write32(advregs.EIMC, 0xffffffff)
	r.Read32(advregs.ICR)
	return nil
}

// readNVM reads one 16-bit NVM word through EERD.
func (d *Device) readNVM(word int) (uint16, error) {
	r := d.regs
	r.Write32(EERD, uint32(word)<<advregs.EERD_ADDR_SHIFT|advregs.EERD_START)
	var v uint32
	if !d.waitFor(10*time.Millisecond, func() bool { v = r.Read32(EERD); return v&advregs.EERD_DONE != 0 }) {
		return 0, fmt.Errorf("igc %s: NVM word %d: EERD not done", d.name, word)
	}
	return uint16(v >> advregs.EERD_DATA_SHIFT), nil
}

func validMAC(m [6]byte) bool {
	return m[0]&1 == 0 && m != [6]byte{} && m != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
}

// readMAC takes the station address the hardware loaded into RAL0/RAH0,
// else reads NVM words 0-2. A blank-NVM part has none: it gets a locally
// administered address, so it comes up (those ids exist to be brought up
// and programmed) and keeps the same address from boot to boot: made from
// the PCIe device serial number when the part reports one, else from its
// PCI location (unique on the machine, not across machines). Any other
// part without a valid address is refused: a programmed NVM that yields
// garbage is a fault to report, not to hide.
func (d *Device) readMAC() ([6]byte, error) {
	lo, hi := d.regs.Read32(advregs.RAL0), d.regs.Read32(advregs.RAH0)
	m := [6]byte{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
	if hi&advregs.RAH_AV == 0 || !validMAC(m) {
		var nvmErr error
		for w := 0; w < nvmWordsMAC; w++ {
			v, err := d.readNVM(w)
			if err != nil {
				nvmErr = err
				break
			}
			m[2*w], m[2*w+1] = byte(v), byte(v>>8)
		}
		switch {
		case nvmErr == nil && validMAC(m):
		case d.id.Flags&FlagBlankNVM != 0:
			m = localMAC(d.serial, d.loc)
			d.logf("%s: %s has a blank NVM: using locally administered address %x", d.name, d.id.Name, m)
		default:
			return m, fmt.Errorf("igc %s: no valid MAC address (RAL/RAH %08x/%08x, NVM %x, err %v)", d.name, lo, hi, m, nvmErr)
		}
	}
	d.writeMAC(m)
	return m, nil
}

// localMAC is a locally administered unicast address: 0x02 and the 64
// bits of a device serial number folded into 40, or 'I', 'G' and the PCI
// bus, device and function when there is none.
func localMAC(serial uint64, loc [3]uint8) [6]byte {
	if serial == 0 {
		return [6]byte{0x02, 0x49, 0x47, loc[0], loc[1], loc[2]}
	}
	m := [6]byte{0x02}
	for i := 0; i < 8; i++ {
		m[1+i%5] ^= byte(serial >> (8 * i))
	}
	return m
}

// readSerial returns the PCIe device serial number, or 0 when there is no
// such capability or it reads as blank (zero or all ones).
func readSerial(dev *nic.Device) uint64 {
	if dev.Config == nil {
		return 0
	}
	c, ok := pci.FindExtCap(dev.Func.Caps, pci.ExtCapDSN)
	if !ok {
		return 0
	}
	lo, err1 := dev.Config.ReadConfig(dev.Func.Addr, c.Offset+4, 4)
	hi, err2 := dev.Config.ReadConfig(dev.Func.Addr, c.Offset+8, 4)
	s := uint64(hi)<<32 | uint64(lo)
	if err1 != nil || err2 != nil || s == ^uint64(0) {
		return 0
	}
	return s
}

func (d *Device) writeMAC(m [6]byte) {
	d.regs.Write32(advregs.RAL0, uint32(m[0])|uint32(m[1])<<8|uint32(m[2])<<16|uint32(m[3])<<24)
	d.regs.Write32(advregs.RAH0, uint32(m[4])|uint32(m[5])<<8|advregs.RAH_AV)
}
