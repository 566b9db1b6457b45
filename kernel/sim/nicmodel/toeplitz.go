package nicmodel

// Toeplitz is the receive-side scaling hash of input under a 40-byte
// secret key: for every set input bit, counting from the most significant
// bit of the first byte, the 32 key bits starting at that bit position are
// XORed into the result.
func Toeplitz(key *[40]byte, input []byte) uint32 {
	var h uint32
	for i, b := range input {
		// The 40 key bits from bit 8i on: the windows for this byte's
		// eight bits are its top 32 bits shifted by 0 to 7.
		var v uint64
		for k := range 5 {
			v <<= 8
			if i+k < len(key) {
				v |= uint64(key[i+k])
			}
		}
		for bit := range 8 {
			if b&(0x80>>bit) != 0 {
				h ^= uint32(v >> (8 - bit))
			}
		}
	}
	return h
}
