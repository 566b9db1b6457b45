package nicmodel

import "encoding/binary"

// Toeplitz is the receive-side scaling hash of input under a 40-byte
// secret key: for every set input bit, counting from the most significant
// bit of the first byte, the 32 key bits starting at that bit position are
// XORed into the result.
func Toeplitz(key *[40]byte, input []byte) uint32 {
	var h uint32
	window := binary.BigEndian.Uint32(key[0:4])
	for i, b := range input {
		for bit := 7; bit >= 0; bit-- {
			if b>>bit&1 != 0 {
				h ^= window
			}
			next := 32 + i*8 + (7 - bit)
			window <<= 1
			if next/8 < len(key) && key[next/8]>>(7-next%8)&1 != 0 {
				window |= 1
			}
		}
	}
	return h
}
