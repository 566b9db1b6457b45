package mi225

import "github.com/ether9/ether9/kernel/sim/nicmodel"

const nvmWords = 0x800 // the 4 KiB shadow RAM EERD reads

// buildNVM returns the NVM image: the MAC address, the valid signature,
// the device id and the checksum. A blank part reads all ones.
func buildNVM(p Part, mac [6]byte) []uint16 {
	w := make([]uint16, nvmWords)
	if p.BlankNVM {
		for i := range w {
			w[i] = 0xffff
		}
		return w
	}
	nicmodel.PutNVMMAC(w, mac)
	w[0x0a] = 0x4000 // init control 1: valid signature 01b in bits 15:14
	w[0x0d] = p.Device
	w[0x0e] = VendorIntel
	nicmodel.SetNVMChecksum(w)
	return w
}

// eerdLocked runs an EERD read; it completes at once. Words past the
// shadow RAM read all ones.
func (n *NIC) eerdLocked(v uint32) {
	n.regs[EERD/4] = nicmodel.EerdWrite(v, func(addr uint32) uint16 {
		if int(addr) < len(n.nvm) {
			return n.nvm[addr]
		}
		return 0xffff
	})
}
