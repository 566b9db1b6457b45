package nicmodel

// FCSLen is the length of the frame check sequence the wire leaves off.
const FCSLen = 4

// IsBroadcast reports whether a frame's destination is ff:ff:ff:ff:ff:ff.
func IsBroadcast(f []byte) bool {
	return len(f) >= 6 && f[0]&f[1]&f[2]&f[3]&f[4]&f[5] == 0xff
}

// IsMulticast reports whether a frame's destination is a group address
// other than broadcast.
func IsMulticast(f []byte) bool {
	return len(f) >= 6 && f[0]&1 != 0 && !IsBroadcast(f)
}

// SizeBin is the index of the size counter (64, 65-127, 128-255, 256-511,
// 512-1023, 1024-1522 bytes with FCS) a frame of l bytes counts in; the
// statistics registers of these parts lay those six out 4 bytes apart.
func SizeBin(l int) int {
	switch {
	case l <= 64:
		return 0
	case l <= 127:
		return 1
	case l <= 255:
		return 2
	case l <= 511:
		return 3
	case l <= 1023:
		return 4
	}
	return 5
}

// MTAHash picks the 12 bits of the destination address that index the
// multicast table array; mo (RCTL.MO) selects which.
func MTAHash(f []byte, mo uint32) uint32 {
	a, b := uint32(f[4]), uint32(f[5])
	var h uint32
	switch mo & 3 {
	case 0:
		h = a>>4 | b<<4
	case 1:
		h = a>>3 | b<<5
	case 2:
		h = a>>2 | b<<6
	default:
		h = a | b<<8
	}
	return h & 0xfff
}

// VLANID is the VLAN identifier of the tag after a frame's addresses.
func VLANID(f []byte) uint32 { return uint32(f[14]&0x0f)<<8 | uint32(f[15]) }

// TableBit reports whether bit i is set in a bit table held in 32-bit
// registers, as the multicast table (MTA) and the VLAN filter (VFTA) are.
func TableBit(table []uint32, i uint32) bool { return table[i>>5]&(1<<(i&31)) != 0 }
