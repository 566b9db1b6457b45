package m82574

// NVM words (82574 EEPROM map).
const (
	nvmWords       = 256 // EECD size field 2: 1 << (2 + 6) words
	NvmMAC0        = 0x00
	NvmInitCtrl1   = 0x0a
	NvmSubsysID    = 0x0b
	NvmSubsysVen   = 0x0c
	NvmDeviceID    = 0x0d
	NvmVendorID    = 0x0e
	NvmChecksum    = 0x3f
	NvmSum         = 0xbaba // words 0x00..0x3f add up to this
	nvmChecksummed = NvmChecksum + 1
)

func (n *NIC) loadNVM() {
	for i := range n.nvm {
		n.nvm[i] = 0xffff
	}
	for i := range 3 {
		n.nvm[NvmMAC0+i] = uint16(n.mac[2*i]) | uint16(n.mac[2*i+1])<<8
	}
	n.nvm[NvmInitCtrl1] = 0x4000 // signature 01b: the NVM is valid
	n.nvm[NvmSubsysID] = n.pers.SubDevice
	n.nvm[NvmSubsysVen] = n.pers.SubVendor
	n.nvm[NvmDeviceID] = n.pers.Device
	n.nvm[NvmVendorID] = n.pers.Vendor
	var sum uint16
	for _, w := range n.nvm[:NvmChecksum] {
		sum += w
	}
	n.nvm[NvmChecksum] = NvmSum - sum
}

// eerdLocked performs an EERD read: it completes at once. Parts without
// EERD leave DONE clear.
func (n *NIC) eerdLocked(v uint32) {
	if v&EerdStart == 0 || !n.pers.EERD {
		n.regs[EERD/4] = v &^ (EerdStart | EerdDone)
		return
	}
	addr := v >> EerdAddrSh & 0x3fff
	data := n.nvm[addr%nvmWords]
	n.regs[EERD/4] = addr<<EerdAddrSh | EerdDone | uint32(data)<<EerdDataSh
}
