package nicmodel

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

// IP protocol numbers the offloads know.
const (
	ProtoTCP = 6
	ProtoUDP = 17
)

// Sum is the ones' complement sum of b.
func Sum(b []byte) uint16 { return checksum.Checksum(b, 0) }

// L4Sum is the ones' complement sum of the pseudo-header (addresses of 4
// or 16 bytes, protocol, length of l4) and the segment l4; a segment with
// a correct checksum sums to 0xffff.
func L4Sum(src, dst []byte, proto uint8, l4 []byte) uint16 {
	s := checksum.Checksum(src, 0)
	s = checksum.Checksum(dst, s)
	var ph [8]byte
	if len(src) == 16 {
		binary.BigEndian.PutUint32(ph[0:], uint32(len(l4)))
		ph[7] = proto
		s = checksum.Checksum(ph[:8], s)
	} else {
		ph[1] = proto
		binary.BigEndian.PutUint16(ph[2:], uint16(len(l4)))
		s = checksum.Checksum(ph[:4], s)
	}
	return checksum.Checksum(l4, s)
}

// InsertIPChecksum stores an IPv4 header checksum: the ones' complement of
// the sum of p[css:end] at p[cso:]. The field is summed as software left
// it, as the hardware does. It reports false if the offsets do not fit.
func InsertIPChecksum(p []byte, css, cso, end int) bool {
	if css < 0 || css >= end || end > len(p) || cso < 0 || cso+2 > len(p) {
		return false
	}
	binary.BigEndian.PutUint16(p[cso:], ^checksum.Checksum(p[css:end], 0))
	return true
}

// InsertL4Checksum stores a TCP or UDP checksum: the ones' complement of
// the sum of p[css:end] plus extra (the length TSO adds to the partial
// pseudo-header sum software left in the field). UDP sends 0 as 0xffff.
func InsertL4Checksum(p []byte, css, cso, end int, extra uint16, udp bool) bool {
	if css < 0 || css >= end || end > len(p) || cso < 0 || cso+2 > len(p) {
		return false
	}
	s := ^checksum.Combine(checksum.Checksum(p[css:end], 0), extra)
	if udp && s == 0 {
		s = 0xffff
	}
	binary.BigEndian.PutUint16(p[cso:], s)
	return true
}

// IPv6Skip walks the extension headers the hardware parses (hop-by-hop,
// routing, destination options) from next and p to the upper-layer
// protocol and its bytes, and reports how many bytes of extension headers
// it crossed. A fragment header, or a header that does not fit, stops it
// with a nil payload: there is no whole L4 header to look at.
func IPv6Skip(next uint8, p []byte) (proto uint8, l4 []byte, skipped int) {
	for range 4 {
		switch next {
		case 0, 43, 60:
			if len(p) < 8 {
				return 0, nil, skipped
			}
			l := (int(p[1]) + 1) * 8
			if l > len(p) {
				return 0, nil, skipped
			}
			next, p, skipped = p[0], p[l:], skipped+l
		case 44:
			return next, nil, skipped
		default:
			return next, p, skipped
		}
	}
	return 0, nil, skipped
}

// RxChecks is what the receive checksum offloads found in a packet; each
// part reports it in its own descriptor bits.
type RxChecks struct {
	IP    bool // the IPv4 header checksum was checked (IPCS)
	IPBad bool // and it, or the header's lengths, was wrong (IPE)
	L4    bool // a TCP or UDP checksum was checked (TCPCS or L4I)
	UDP   bool // the segment was UDP (UDPCS)
	L4Bad bool // and its checksum was wrong (TCPE or L4E)
}

// CheckRx verifies the checksums RXCSUM asks for in packet p: with ip
// (IPOFL) the IPv4 header's, with l4 (TUOFL) the TCP or UDP segment's
// over its pseudo-header. A fragment has no segment to check. An IPv4 UDP
// checksum of zero means none was sent.
func CheckRx(p *Packet, ip, l4 bool) RxChecks {
	var c RxChecks
	if p.IPv4 && ip {
		c.IP = true
		c.IPBad = p.IPBad || Sum(p.IPHdr) != 0xffff
	}
	if !l4 {
		return c
	}
	switch {
	case p.TCP():
		c.L4 = true
		c.L4Bad = L4Sum(p.Src, p.Dst, p.Proto, p.L4) != 0xffff
	case p.UDP():
		c.L4, c.UDP = true, true
		sent := p.IPv6 || binary.BigEndian.Uint16(p.L4[6:]) != 0
		c.L4Bad = sent && L4Sum(p.Src, p.Dst, p.Proto, p.L4) != 0xffff
	}
	return c
}

// PacketChecksum is the packet checksum a receive descriptor reports when
// RXCSUM.PCSD is clear: the ones' complement sum of the frame as stored
// from byte start (RXCSUM.PCSS) to its end, leaving out the FCS when the
// buffer keeps it (fcs); 0 when start is at or past that end.
func PacketChecksum(stored []byte, start int, fcs bool) uint16 {
	end := len(stored)
	if fcs {
		end -= FCSLen
	}
	if start < 0 || start >= end {
		return 0
	}
	return Sum(stored[start:end])
}
