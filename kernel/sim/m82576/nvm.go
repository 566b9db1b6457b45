package m82576

import "encoding/binary"

// The NVM: 256 words, the first 64 covered by the checksum in word 0x3f
// (the sum of words 0x00-0x3f is 0xbaba). Words 0-2 hold the MAC address.
const (
	nvmWords    = 256
	nvmChecksum = 0x3f
	nvmSum      = 0xbaba
	nvmSubDev   = 0x0b
	nvmSubVen   = 0x0c
	nvmDevID    = 0x0d
	nvmVenID    = 0x0e
)

func (n *NIC) loadNVM() {
	for i := range 3 {
		n.nvm[i] = binary.LittleEndian.Uint16(n.mac[2*i:])
	}
	n.nvm[nvmSubDev] = subDevice
	n.nvm[nvmSubVen] = subVendor
	n.nvm[nvmDevID] = deviceID
	n.nvm[nvmVenID] = vendorID
	var sum uint16
	for _, w := range n.nvm[:nvmChecksum] {
		sum += w
	}
	n.nvm[nvmChecksum] = nvmSum - sum
}

// eerdLocked runs an EERD read: START with a word address; the word comes
// back in the data field with DONE. The read completes at once.
func (n *NIC) eerdLocked(v uint32) {
	if v&EerdStart == 0 {
		n.regs[EERD/4] = v &^ EerdDone
		return
	}
	addr := v >> EerdAddrSh & EerdAddrMax
	data := uint32(0xffff)
	if addr < nvmWords {
		data = uint32(n.nvm[addr])
	}
	n.regs[EERD/4] = data<<EerdDataSh | addr<<EerdAddrSh | EerdDone
}
