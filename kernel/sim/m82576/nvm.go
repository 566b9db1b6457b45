package m82576

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// The NVM: 256 words, the address and the checksum where the family keeps
// them, and the PCI identity.
const (
	nvmWords  = 256
	nvmSubDev = 0x0b
	nvmSubVen = 0x0c
	nvmDevID  = 0x0d
	nvmVenID  = 0x0e
)

func (n *NIC) loadNVM() {
	nicmodel.PutNVMMAC(n.nvm[:], n.mac)
	n.nvm[nvmSubDev] = subDevice
	n.nvm[nvmSubVen] = subVendor
	n.nvm[nvmDevID] = deviceID
	n.nvm[nvmVenID] = vendorID
	nicmodel.SetNVMChecksum(n.nvm[:])
}

// eerdLocked runs an EERD read; it completes at once. Words past the NVM
// read all ones.
func (n *NIC) eerdLocked(v uint32) {
	n.regs[nicmodel.EERD/4] = nicmodel.EerdWrite(v, func(addr uint32) uint16 {
		if addr < nvmWords {
			return n.nvm[addr]
		}
		return 0xffff
	})
}
