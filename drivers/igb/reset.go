package igb

import (
	"fmt"
	"github.com/ether9/ether9/drivers/advregs"
	"time"
)

// Reset timing (82576 datasheet 4.3): about 1 ms after CTRL.RST before
// registers may be touched, NVM auto-read within 10 ms.
const (
	resetSettle     = time.Millisecond
	masterTimeout   = 10 * time.Millisecond
	resetTimeout    = 100 * time.Millisecond
	autoReadTimeout = 20 * time.Millisecond
	queueTimeout    = 10 * time.Millisecond
	pollStep        = 50 * time.Microsecond
	nvmWordsMAC     = 3
	nvmLANFuncWords = 0x40 // 82580 and later: each port's NVM section
)

// reset quiesces DMA and resets the MAC: masks interrupts, stops RX and
// TX, waits for outstanding master requests, then CTRL.RST.
func (d *Device) reset() error {
	r := d.regs
	if v := r.Read32(advregs.STATUS); v == 0xffffffff {
		return fmt.Errorf("igb %s: STATUS reads all ones: device not responding", d.name)
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
	r.Write32(advregs.CTRL, r.Read32(advregs.CTRL)|advregs.CTRL_RST)
	d.clock.Sleep(resetSettle)
	if !d.waitFor(resetTimeout, func() bool { return r.Read32(advregs.CTRL)&advregs.CTRL_RST == 0 }) {
		return fmt.Errorf("igb %s: CTRL.RST did not clear within %v", d.name, resetTimeout)
	}
	if d.info.Flags&FlagFlashless == 0 {
		if !d.waitFor(autoReadTimeout, func() bool { return r.Read32(advregs.EECD)&advregs.EECD_AUTO_RD != 0 }) {
			d.logf("%s: NVM auto-read not done after reset", d.name)
		}
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
	ok := d.waitFor(10*time.Millisecond, func() bool {
		v = r.Read32(EERD)
		return v&advregs.EERD_DONE != 0
	})
	if !ok {
		return 0, fmt.Errorf("igb %s: NVM word %d: EERD not done", d.name, word)
	}
	return uint16(v >> advregs.EERD_DATA_SHIFT), nil
}

func validMAC(m [6]byte) bool { return m[0]&1 == 0 && m != [6]byte{} }

// readMAC takes the station address the hardware loaded into RAL0/RAH0,
// or reads it from the port's NVM words, and programs it back as valid.
func (d *Device) readMAC() ([6]byte, error) {
	lo, hi := d.regs.Read32(advregs.RAL0), d.regs.Read32(advregs.RAH0)
	m := [6]byte{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
	if hi&advregs.RAH_AV == 0 || !validMAC(m) {
		var nvmErr error
		base := 0
		if d.info.Flags&FlagLANFuncNVM != 0 && d.fn > 0 {
			base = nvmLANFuncWords * (1 + int(d.fn))
		}
		for w := 0; w < nvmWordsMAC; w++ {
			v, err := d.readNVM(base + w)
			if err != nil {
				nvmErr = err
				break
			}
			m[2*w], m[2*w+1] = byte(v), byte(v>>8)
		}
		if nvmErr == nil && d.info.Flags&FlagPortXOR != 0 && d.fn&1 == 1 {
			m[5] ^= 1
		}
		if nvmErr != nil || !validMAC(m) {
			return m, fmt.Errorf("igb %s: no valid MAC address (RAL/RAH %08x/%08x, NVM %x, err %v)", d.name, lo, hi, m, nvmErr)
		}
	}
	d.regs.Write32(advregs.RAL0, uint32(m[0])|uint32(m[1])<<8|uint32(m[2])<<16|uint32(m[3])<<24)
	d.regs.Write32(advregs.RAH0, uint32(m[4])|uint32(m[5])<<8|advregs.RAH_AV)
	return m, nil
}
