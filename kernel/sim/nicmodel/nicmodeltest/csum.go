package nicmodeltest

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// CsumCase is a frame for a receive checksum test: TCP or UDP over IPv4
// or IPv6, its checksums right or one of them wrong.
type CsumCase struct {
	Name    string
	Frame   []byte
	V6, UDP bool
	Payload []byte // the L4 payload: the case's name, to tell datagrams apart
	Good    bool   // every checksum in the frame is right
	BadIP   bool   // the IPv4 header checksum is wrong (IPE)
	BadL4   bool   // the TCP or UDP checksum is wrong (TCPE, L4E)
}

// CsumCases are TCP and UDP over IPv4 and IPv6 built on v4 and v6 (their
// MACs, addresses and ports; V6 and Payload are set here), each intact
// and with its L4 checksum corrupted; TCP and UDP over IPv4 with a bad
// header checksum; and UDP over IPv4 sent without a checksum (0), which
// is valid. Frames are padded to the 60-byte minimum.
func CsumCases(v4, v6 Packet) []CsumCase {
	var cs []CsumCase
	add := func(name string, p Packet, udp bool, corrupt func(f []byte) (badIP, badL4 bool)) {
		p.Payload, p.Pad = []byte(name), true
		f := p.TCP()
		if udp {
			f = p.UDP()
		}
		badIP, badL4 := corrupt(f)
		cs = append(cs, CsumCase{Name: name, Frame: f, V6: p.V6, UDP: udp, Payload: p.Payload,
			Good: !badIP && !badL4, BadIP: badIP, BadL4: badL4})
	}
	v6.V6 = true
	for _, fam := range []struct {
		ip string
		p  Packet
	}{{"IPv4", v4}, {"IPv6", v6}} {
		for _, udp := range []bool{false, true} {
			l4 := "TCP"
			if udp {
				l4 = "UDP"
			}
			p, name := fam.p, l4+"/"+fam.ip
			add(name+" good", p, udp, func([]byte) (bool, bool) { return false, false })
			add(name+" bad L4 checksum", p, udp, func(f []byte) (bool, bool) {
				flip(l4Checksum(f, p.V6, udp), udp && !p.V6)
				return false, true
			})
			if !p.V6 {
				add(name+" bad IP header checksum", p, udp, func(f []byte) (bool, bool) {
					flip(f[header.EthernetMinimumSize+10:], false)
					return true, false
				})
			}
		}
	}
	add("UDP/IPv4 without checksum", v4, true, func(f []byte) (bool, bool) {
		binary.BigEndian.PutUint16(l4Checksum(f, false, true), 0)
		return false, false
	})
	return cs
}

// l4Checksum is the TCP or UDP checksum field of frame f.
func l4Checksum(f []byte, v6, udp bool) []byte {
	off := header.EthernetMinimumSize + header.IPv4MinimumSize
	if v6 {
		off = header.EthernetMinimumSize + header.IPv6MinimumSize
	}
	if udp {
		return f[off+6:]
	}
	return f[off+16:]
}

// flip makes the 16-bit checksum at b wrong. Changing it by 0x100 cannot
// give an equivalent value (only 0 and 0xffff are the same in ones'
// complement); where that gives 0, which would mean "no checksum" (UDP
// over IPv4), it gives 0x300.
func flip(b []byte, zeroMeansNone bool) {
	c := binary.BigEndian.Uint16(b) ^ 0x100
	if c == 0 && zeroMeansNone {
		c = 0x300
	}
	binary.BigEndian.PutUint16(b, c)
}
