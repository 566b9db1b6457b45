package igb

import (
	"fmt"

	"github.com/ether9/ether9/drivers/adv"
)

// nvmLANFuncWords is the size of each port's NVM section on the 82580 and
// later, where a port past the first reads its address from its own.
const nvmLANFuncWords = 0x40

// reset quiesces DMA and resets the MAC with CTRL.RST; a flash-less part
// has no NVM auto-read to wait for.
func (d *Device) reset() error {
	return d.Core.Reset(adv.CTRL_RST, "RST", d.info.Flags&FlagFlashless == 0)
}

// readMAC takes the station address the hardware loaded into RAL0/RAH0,
// or reads it from the port's NVM words, and programs it back as valid.
func (d *Device) readMAC() ([6]byte, error) {
	m, ok, lo, hi := d.Core.StationAddress()
	if !ok {
		base := 0
		if d.info.Flags&FlagLANFuncNVM != 0 && d.fn > 0 {
			base = nvmLANFuncWords * (1 + int(d.fn))
		}
		var nvmErr error
		m, nvmErr = d.Core.ReadNVMMAC(EERD, base)
		if nvmErr == nil && d.info.Flags&FlagPortXOR != 0 && d.fn&1 == 1 {
			m[5] ^= 1
		}
		if nvmErr != nil || !adv.ValidMAC(m) {
			return m, fmt.Errorf("igb %s: no valid MAC address (RAL/RAH %08x/%08x, NVM %x, err %v)", d.Core.Name, lo, hi, m, nvmErr)
		}
	}
	d.Core.SetStationAddress(m)
	return m, nil
}
