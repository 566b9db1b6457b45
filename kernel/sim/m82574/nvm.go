package m82574

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// NVM words (82574 EEPROM map).
const (
	nvmWords     = 256 // EECD size field 2: 1 << (2 + 6) words
	NvmInitCtrl1 = 0x0a
	NvmSubsysID  = 0x0b
	NvmSubsysVen = 0x0c
	NvmDeviceID  = 0x0d
	NvmVendorID  = 0x0e
)

// loadNVM writes the EEPROM image: erased words but for the address, the
// valid signature, the PCI identity and the checksum.
func (n *NIC) loadNVM() {
	for i := range n.nvm {
		n.nvm[i] = 0xffff
	}
	nicmodel.PutNVMMAC(n.nvm[:], n.mac)
	n.nvm[NvmInitCtrl1] = 0x4000 // signature 01b: the NVM is valid
	n.nvm[NvmSubsysID] = n.pers.SubDevice
	n.nvm[NvmSubsysVen] = n.pers.SubVendor
	n.nvm[NvmDeviceID] = n.pers.Device
	n.nvm[NvmVendorID] = n.pers.Vendor
	nicmodel.SetNVMChecksum(n.nvm[:])
}

// eerdLocked performs an EERD read: it completes at once, the address
// wrapping at the EEPROM's size. Parts without EERD leave DONE clear.
func (n *NIC) eerdLocked(v uint32) {
	if !n.pers.EERD {
		v &^= nicmodel.EerdStart
	}
	n.regs[nicmodel.EERD/4] = nicmodel.EerdWrite(v, func(addr uint32) uint16 { return n.nvm[addr%nvmWords] })
}
