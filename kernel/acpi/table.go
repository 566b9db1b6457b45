// Package acpi parses the ACPI tables ether9 needs: DMAR (the VT-d units)
// and MCFG (PCI Express ECAM windows).
package acpi

import (
	"encoding/binary"
	"fmt"
)

// HeaderLen is the length of the standard ACPI system description header.
const HeaderLen = 36

// Header is the standard ACPI system description table header.
type Header struct {
	Signature string
	Length    uint32
	Revision  uint8
	OEMID     string
	OEMTable  string
}

// ParseHeader checks a table's signature, length and checksum and returns
// its header and body (the bytes after the header, up to Length).
func ParseHeader(b []byte, sig string) (Header, []byte, error) {
	if len(b) < HeaderLen {
		return Header{}, nil, fmt.Errorf("acpi %s: table truncated: %d bytes, header needs %d", sig, len(b), HeaderLen)
	}
	h := Header{
		Signature: string(b[0:4]),
		Length:    binary.LittleEndian.Uint32(b[4:8]),
		Revision:  b[8],
		OEMID:     string(b[10:16]),
		OEMTable:  string(b[16:24]),
	}
	if h.Signature != sig {
		return h, nil, fmt.Errorf("acpi: signature %q, want %q", h.Signature, sig)
	}
	if h.Length < HeaderLen || int(h.Length) > len(b) {
		return h, nil, fmt.Errorf("acpi %s: length field %d, have %d bytes", sig, h.Length, len(b))
	}
	var sum byte
	for _, c := range b[:h.Length] {
		sum += c
	}
	if sum != 0 {
		return h, nil, fmt.Errorf("acpi %s: checksum off by %#x", sig, sum)
	}
	return h, b[HeaderLen:h.Length], nil
}

// Build returns a table with a valid header and checksum around body. The
// simulated machine and tests use it to describe their hardware.
func Build(sig string, revision uint8, body []byte) []byte {
	b := make([]byte, HeaderLen+len(body))
	copy(b[0:4], sig)
	binary.LittleEndian.PutUint32(b[4:8], uint32(len(b)))
	b[8] = revision
	copy(b[10:16], "ETHER9")
	copy(b[16:24], "ETHER9  ")
	copy(b[HeaderLen:], body)
	var sum byte
	for _, c := range b {
		sum += c
	}
	b[9] = -sum
	return b
}
