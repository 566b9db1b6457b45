package nicmodel

import (
	"encoding/binary"
	"hash/crc32"
)

// VLANTagLen is the length of an 802.1Q tag.
const VLANTagLen = 4

// Tagged reports whether frame f carries a VLAN tag of type vet (VET)
// after its addresses.
func Tagged(f []byte, vet uint16) bool {
	return len(f) >= EthHdrLen+VLANTagLen && binary.BigEndian.Uint16(f[12:]) == vet
}

// RxFrame builds a received frame as the MAC stores it in receive
// buffers, reusing its buffer from frame to frame.
type RxFrame struct{ buf []byte }

// Build returns frame as stored: with strip, the VLAN tag that follows
// the addresses taken out and its TCI returned; with fcs, the frame check
// sequence (the CRC-32 of the frame as it came off the wire) appended.
// The result is frame itself when nothing changes, else valid until the
// next Build.
func (r *RxFrame) Build(frame []byte, strip, fcs bool) (data []byte, tci uint16) {
	strip = strip && len(frame) >= EthHdrLen+VLANTagLen
	if !strip && !fcs {
		return frame, 0
	}
	b := r.buf[:0]
	if strip {
		tci = binary.BigEndian.Uint16(frame[14:])
		b = append(append(b, frame[:12]...), frame[16:]...)
	} else {
		b = append(b, frame...)
	}
	if fcs {
		b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(frame))
	}
	r.buf = b
	return b, tci
}
