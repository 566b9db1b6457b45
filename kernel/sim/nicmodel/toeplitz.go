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

// ToeplitzTable is the Toeplitz hash of one key unrolled into a table per
// input byte position (the 36 bytes of an IPv6 address pair and ports),
// so hashing costs one lookup per byte. Build it again when the key
// changes.
type ToeplitzTable [36][256]uint32

// NewToeplitzTable builds the table for key.
func NewToeplitzTable(key *[40]byte) *ToeplitzTable {
	t := new(ToeplitzTable)
	var in [36]byte
	for i := range t {
		// One set bit at a time at position i (the bytes before it
		// zero); the hash is linear, so the other values are XORs.
		for bit := range 8 {
			in[i] = 0x80 >> bit
			t[i][in[i]] = Toeplitz(key, in[:i+1])
		}
		in[i] = 0
		for b := 1; b < 256; b++ {
			low := b & -b
			t[i][b] = t[i][b&^low] ^ t[i][low]
		}
	}
	return t
}

// Hash is Toeplitz(key, input) for input of at most 36 bytes.
func (t *ToeplitzTable) Hash(input []byte) uint32 {
	var h uint32
	for i, b := range input[:min(len(input), len(t))] {
		h ^= t[i][b]
	}
	return h
}
