package adv

// rssKey is the hash key: the well-known default of Microsoft's RSS
// specification, so a flow's queue can be checked with any Toeplitz
// implementation.
var rssKey = [40]byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb3, 0x8f, 0xb0, 0x2b, 0xa2, 0x5c,
}

// SetupRSS writes the key, fills the redirection table with entry(i) for
// each of its entries (the value of the entry's byte) and, if on, hashes
// IPv4 and IPv6 with TCP and UDP ports; off leaves MRQC 0, every frame to
// queue 0.
func (m *MAC) SetupRSS(entry func(i int) uint32, on bool) {
	r := m.Regs
	for i := 0; i < len(rssKey)/4; i++ {
		k := rssKey[4*i:]
		r.Write32(RSSRK+uint32(4*i), uint32(k[0])|uint32(k[1])<<8|uint32(k[2])<<16|uint32(k[3])<<24)
	}
	for i := 0; i < RETAEntries/4; i++ {
		var v uint32
		for j := 0; j < 4; j++ {
			v |= entry(4*i+j) << (8 * j)
		}
		r.Write32(RETA+uint32(4*i), v)
	}
	if !on {
		r.Write32(MRQC, 0)
		return
	}
	r.Write32(MRQC, MRQC_ENABLE_RSS|MRQC_RSS_FIELD_IPV4|MRQC_RSS_FIELD_IPV4_TCP|
		MRQC_RSS_FIELD_IPV6|MRQC_RSS_FIELD_IPV6_TCP|MRQC_RSS_FIELD_IPV4_UDP|MRQC_RSS_FIELD_IPV6_UDP)
}

// Toeplitz computes the RSS hash of input with the key SetupRSS writes,
// as the device does: for tests and for tools that pick a flow for a
// queue.
func Toeplitz(input []byte) uint32 {
	var h uint32
	key := uint64(rssKey[0])<<56 | uint64(rssKey[1])<<48 | uint64(rssKey[2])<<40 | uint64(rssKey[3])<<32 |
		uint64(rssKey[4])<<24 | uint64(rssKey[5])<<16 | uint64(rssKey[6])<<8 | uint64(rssKey[7])
	next := 8
	for _, b := range input {
		for bit := 7; bit >= 0; bit-- {
			if b>>uint(bit)&1 != 0 {
				h ^= uint32(key >> 32)
			}
			key <<= 1
		}
		if next < len(rssKey) {
			key |= uint64(rssKey[next])
		}
		next++
	}
	return h
}
