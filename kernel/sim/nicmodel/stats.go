package nicmodel

// The 64-bit statistics of the Intel gigabit family: good octets received
// and transmitted, total octets received and transmitted, each a low and
// a high register at the same offsets on every part.
const (
	GORCL = 0x04088
	GORCH = 0x0408c
	GOTCL = 0x04090
	GOTCH = 0x04094
	TORL  = 0x040c0
	TORH  = 0x040c4
	TOTL  = 0x040c8
	TOTH  = 0x040cc
)

// ReadStat reads the statistic at off of register file r (indexed by
// offset/4) and clears it, as the hardware does on a read. A 64-bit
// counter is read low half first: reading the low half leaves it, reading
// the high half clears both.
func ReadStat(r []uint32, off uint32) uint32 {
	v := r[off/4]
	switch off {
	case GORCL, GOTCL, TORL, TOTL:
	case GORCH, GOTCH, TORH, TOTH:
		r[off/4], r[off/4-1] = 0, 0
	default:
		r[off/4] = 0
	}
	return v
}

// AddStat adds d to the 32-bit statistic at off; the counter sticks at its
// maximum rather than wrap.
func AddStat(r []uint32, off uint32, d uint64) {
	v := uint64(r[off/4]) + d
	r[off/4] = uint32(min(v, 0xffffffff))
}

// AddStat64 adds d to the 64-bit statistic whose low half is at lo.
func AddStat64(r []uint32, lo uint32, d uint64) {
	v := uint64(r[lo/4]) | uint64(r[lo/4+1])<<32
	v += d
	r[lo/4], r[lo/4+1] = uint32(v), uint32(v>>32)
}
