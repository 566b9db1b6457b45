package nicmodel

// The NVM layout the family shares: the MAC address in words 0 to 2,
// low byte first, and a checksum word at 0x3f that makes words 0 to 0x3f
// add up to 0xbaba.
const (
	NVMChecksumWord = 0x3f
	NVMSum          = 0xbaba
)

// PutNVMMAC stores mac in words 0 to 2 of nvm.
func PutNVMMAC(nvm []uint16, mac [6]byte) {
	for i := range 3 {
		nvm[i] = uint16(mac[2*i]) | uint16(mac[2*i+1])<<8
	}
}

// SetNVMChecksum sets the checksum word of nvm.
func SetNVMChecksum(nvm []uint16) {
	var sum uint16
	for _, w := range nvm[:NVMChecksumWord] {
		sum += w
	}
	nvm[NVMChecksumWord] = NVMSum - sum
}

// EERD fields: START and DONE, the word address in 15:2 (14 bits), the
// data in 31:16.
const (
	EerdStart   = 1 << 0
	EerdDone    = 1 << 1
	EerdAddrSh  = 2
	EerdAddrMax = 0x3fff
	EerdDataSh  = 16
)

// EerdWrite is the EERD register after software writes v: with START, the
// read of the word at the address completes at once (word reads it),
// the data and DONE set; without, the write is stored with DONE clear.
func EerdWrite(v uint32, word func(addr uint32) uint16) uint32 {
	if v&EerdStart == 0 {
		return v &^ EerdDone
	}
	addr := v >> EerdAddrSh & EerdAddrMax
	return uint32(word(addr))<<EerdDataSh | addr<<EerdAddrSh | EerdDone
}
