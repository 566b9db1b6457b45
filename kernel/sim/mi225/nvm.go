package mi225

import "encoding/binary"

const (
	nvmWords       = 0x800 // the 4 KiB shadow RAM EERD reads
	nvmChecksumAt  = 0x3f
	nvmChecksumSum = 0xbaba // words 0x00..0x3F add up to this
)

// buildNVM returns the NVM image: the MAC address in words 0-2, the
// checksum word making words 0..0x3F sum to 0xBABA. A blank part reads
// all ones.
func buildNVM(p Part, mac [6]byte) []uint16 {
	w := make([]uint16, nvmWords)
	if p.BlankNVM {
		for i := range w {
			w[i] = 0xffff
		}
		return w
	}
	for i := range 3 {
		w[i] = binary.LittleEndian.Uint16(mac[2*i:])
	}
	w[0x0a] = 0x4000 // init control 1: valid signature 01b in bits 15:14
	w[0x0d] = p.Device
	w[0x0e] = VendorIntel
	var sum uint16
	for _, v := range w[:nvmChecksumAt] {
		sum += v
	}
	w[nvmChecksumAt] = nvmChecksumSum - sum
	return w
}

// eerdLocked runs an EERD read: START with the word address in bits 15:2;
// the read completes at once with DONE and the data in bits 31:16.
func (n *NIC) eerdLocked(v uint32) {
	if v&EerdStart == 0 {
		n.regs[EERD/4] = v &^ EerdDone
		return
	}
	addr := v >> EerdAddrShift & 0x3fff
	data := uint16(0xffff)
	if int(addr) < len(n.nvm) {
		data = n.nvm[addr]
	}
	n.regs[EERD/4] = addr<<EerdAddrShift | EerdDone | uint32(data)<<EerdDataShift
}
