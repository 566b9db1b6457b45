package e1000e

import (
	"fmt"
	"time"
)

// Reset timing from the datasheets: the MAC needs about 1 ms after CTRL.RST
// before its registers may be touched; NVM auto-read and LAN init take up
// to 10 ms on 8257x and longer on PCH parts.
const (
	resetSettle     = time.Millisecond
	masterTimeout   = 10 * time.Millisecond
	resetTimeout    = 100 * time.Millisecond
	autoReadTimeout = 20 * time.Millisecond
	pollStep        = 50 * time.Microsecond
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

// reset quiesces DMA, resets the MAC and waits for its configuration to
// load: masks interrupts, stops RX and TX, disables bus mastering inside
// the MAC so no DMA is torn, then CTRL.RST.
//
// Stopping a unit that ran leaves its descriptor fetches and write-backs
// in flight, so they get dmaSettle to land. A unit that was off (firmware
// without a network boot never starts one) has nothing in flight, and
// the GIO master handshake below is wait enough: a probe skips the 10
// ms, which under QEMU TCG is a tenth of the time from VT-d on to the
// stack up.
func (d *Device) reset() error {
	r := d.regs
	if v := r.Read32(STATUS); v == 0xffffffff {
		return fmt.Errorf("e1000e %s: STATUS reads all ones: device not responding", d.name)
	}
	ran := r.Read32(RCTL)&RCTL_EN != 0 || r.Read32(TCTL)&TCTL_EN != 0
	r.Write32(IMC, 0xffffffff)
	r.Write32(RCTL, 0)
	r.Write32(TCTL, TCTL_PSP)
	r.Read32(STATUS) // flush posted writes
	if ran {
		d.clock.Sleep(dmaSettle)
	}

	r.Write32(CTRL, r.Read32(CTRL)|CTRL_GIO_MASTER)
	if !d.waitFor(masterTimeout, func() bool { return r.Read32(STATUS)&STATUS_GIO_MASTER == 0 }) {
		d.logf("%s: GIO master requests still pending at reset", d.name)
	}
	r.Write32(CTRL, r.Read32(CTRL)|CTRL_RST)
	d.clock.Sleep(resetSettle)
	if !d.waitFor(resetTimeout, func() bool { return r.Read32(CTRL)&CTRL_RST == 0 }) {
		return fmt.Errorf("e1000e %s: CTRL.RST did not clear within %v", d.name, resetTimeout)
	}
	switch {
	case d.info.Flags&FlagLANInit != 0:
		if !d.waitFor(autoReadTimeout, func() bool { return r.Read32(STATUS)&STATUS_LAN_INIT != 0 }) {
			d.logf("%s: LAN init not done after reset", d.name)
		}
	case d.info.Flags&FlagEERD != 0:
		if !d.waitFor(autoReadTimeout, func() bool { return r.Read32(EECD)&EECD_AUTO_RD != 0 }) {
			d.logf("%s: NVM auto-read not done after reset", d.name)
		}
	}
	r.Write32(IMC, 0xffffffff)
	r.Read32(ICR)
	return nil
}

// readNVM reads one 16-bit NVM word through EERD.
func (d *Device) readNVM(word int) (uint16, error) {
	r := d.regs
	r.Write32(EERD, uint32(word)<<EERD_ADDR_SHIFT|EERD_START)
	var v uint32
	ok := d.waitFor(10*time.Millisecond, func() bool {
		v = r.Read32(EERD)
		return v&EERD_DONE != 0
	})
	if !ok {
		return 0, fmt.Errorf("e1000e %s: NVM word %d: EERD not done", d.name, word)
	}
	return uint16(v >> EERD_DATA_SHIFT), nil
}

func validMAC(m [6]byte) bool {
	return m[0]&1 == 0 && m != [6]byte{}
}

// readMAC finds the station address: from the NVM where EERD reaches it
// (the second port of a dual-port part flips the last bit), else from
// RAL0/RAH0 as the hardware loaded them. The result is programmed into
// RAL0/RAH0 with the address-valid bit.
func (d *Device) readMAC(fn uint8) ([6]byte, error) {
	var m [6]byte
	var nvmErr error
	if d.info.Flags&FlagEERD != 0 {
		for w := 0; w < nvmWordsMAC; w++ {
			v, err := d.readNVM(w)
			if err != nil {
				nvmErr = err
				break
			}
			m[2*w], m[2*w+1] = byte(v), byte(v>>8)
		}
		if nvmErr == nil && d.info.Flags&FlagDualPort != 0 && fn&1 == 1 {
			m[5] ^= 1
		}
	}
	if nvmErr != nil || !validMAC(m) {
		lo, hi := d.regs.Read32(RAL0), d.regs.Read32(RAH0)
		var ram [6]byte
		ram[0], ram[1], ram[2], ram[3] = byte(lo), byte(lo>>8), byte(lo>>16), byte(lo>>24)
		ram[4], ram[5] = byte(hi), byte(hi>>8)
		if hi&RAH_AV == 0 || !validMAC(ram) {
			return m, fmt.Errorf("e1000e %s: no valid MAC address (NVM %x, err %v; RAL/RAH %08x/%08x)", d.name, m, nvmErr, lo, hi)
		}
		m = ram
	}
	d.writeRAR0(m)
	return m, nil
}

// writeRAR0 programs the station address into RAL0/RAH0 with the
// address-valid bit.
func (d *Device) writeRAR0(m [6]byte) {
	d.regs.Write32(RAL0, uint32(m[0])|uint32(m[1])<<8|uint32(m[2])<<16|uint32(m[3])<<24)
	d.regs.Write32(RAH0, uint32(m[4])|uint32(m[5])<<8|RAH_AV)
}
