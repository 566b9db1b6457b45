package nicmodel

import "encoding/binary"

// PutLegacyRx writes back a legacy receive descriptor, laid out alike on
// the 82574, the 82576 and the I225: the buffer address stays, then the
// length, the packet checksum, status, errors and the VLAN tag (the
// special field).
func PutLegacyRx(wb []byte, addr uint64, length, csum uint16, status, errors uint8, vlan uint16) {
	le := binary.LittleEndian
	le.PutUint64(wb[0:], addr)
	le.PutUint16(wb[8:], length)
	le.PutUint16(wb[10:], csum)
	wb[12], wb[13] = status, errors
	le.PutUint16(wb[14:], vlan)
}

// PutLegacyRxFrag writes back the legacy descriptor of one buffer of a
// frame: DD in every one; EOP, the status and errors bytes and the VLAN
// tag only in the frame's last (the 82574's and 82576's way; the I225
// repeats them).
func PutLegacyRxFrag(wb []byte, addr uint64, length, csum uint16, status, errors uint8, vlan uint16, last bool) {
	const dd, eop = 1 << 0, 1 << 1
	if !last {
		status, errors, vlan = 0, 0, 0
	} else {
		status |= eop
	}
	PutLegacyRx(wb, addr, length, csum, dd|status, errors, vlan)
}
