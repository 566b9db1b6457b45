package image

import "encoding/binary"

// bcjX86Decode undoes the xz x86 branch converter in place. The encoder
// rewrote the relative targets of CALL (E8) and JMP (E9) instructions into
// absolute ones so that repeated calls to one function compress well; this
// turns them back. start is the filter's start offset (the stream position
// of buf[0]). The last four bytes are never converted.
func bcjX86Decode(buf []byte, start uint32) {
	// Indexed by the mask of recent E8/E9 bytes seen in the 3 bytes before
	// the current one: whether a conversion is allowed, and which byte of
	// the operand decides whether to keep flipping.
	allowed := [8]bool{true, true, true, false, true, false, false, false}
	bitNum := [8]uint32{0, 1, 2, 2, 3, 3, 3, 3}
	msByte := func(b byte) bool { return b == 0x00 || b == 0xff }

	if len(buf) <= 4 {
		return
	}
	var mask uint32
	prev := -1
	for i := 0; i < len(buf)-4; i++ {
		if buf[i]&0xfe != 0xe8 {
			continue
		}
		if d := i - prev; d > 3 {
			mask = 0
		} else {
			mask = (mask << (d - 1)) & 7
			if mask != 0 {
				b := buf[i+4-int(bitNum[mask])]
				if !allowed[mask] || msByte(b) {
					prev = i
					mask = mask<<1 | 1
					continue
				}
			}
		}
		prev = i
		if !msByte(buf[i+4]) {
			mask = mask<<1 | 1
			continue
		}
		pos := start + uint32(i) + 5
		src := binary.LittleEndian.Uint32(buf[i+1:])
		var dest uint32
		for {
			dest = src - pos
			if mask == 0 {
				break
			}
			j := bitNum[mask] * 8
			if !msByte(byte(dest >> (24 - j))) {
				break
			}
			src = dest ^ (1<<(32-j) - 1)
		}
		dest &= 0x01ffffff
		dest |= -(dest & 0x01000000)
		binary.LittleEndian.PutUint32(buf[i+1:], dest)
		i += 4
	}
}
