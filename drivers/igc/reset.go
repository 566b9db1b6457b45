package igc

import (
	"fmt"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/pci"
)

// reset quiesces DMA and resets the device with CTRL.DEV_RST, the whole
// function, and waits for the NVM auto-read.
func (d *Device) reset() error {
	return d.Core.Reset(CTRL_DEV_RST, "DEV_RST", true)
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
	m, ok, lo, hi := d.Core.StationAddress()
	if !ok {
		var nvmErr error
		m, nvmErr = d.Core.ReadNVMMAC(EERD, 0)
		switch {
		case nvmErr == nil && adv.ValidMAC(m):
		case d.id.Flags&FlagBlankNVM != 0:
			m = localMAC(d.serial, d.loc)
			d.Core.Logf("%s: %s has a blank NVM: using locally administered address %x", d.Core.Name, d.id.Name, m)
		default:
			return m, fmt.Errorf("igc %s: no valid MAC address (RAL/RAH %08x/%08x, NVM %x, err %v)", d.Core.Name, lo, hi, m, nvmErr)
		}
	}
	d.Core.SetStationAddress(m)
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
