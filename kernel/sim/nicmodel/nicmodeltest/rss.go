package nicmodeltest

import (
	"encoding/binary"
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// RSSKey is the secret key of Microsoft's RSS verification suite, which
// the parts' datasheets use in their hash examples.
func RSSKey() [40]byte {
	return [40]byte{
		0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
		0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
		0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
		0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
		0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
	}
}

// RSSVector is one row of the suite: a flow and its hashes under RSSKey.
type RSSVector struct {
	Src, Dst         tcpip.Address
	SrcPort, DstPort uint16
	IPHash           uint32 // over the addresses
	L4Hash           uint32 // over the addresses and ports
}

// Input is what the hash reads: source and destination address, then,
// with ports, source and destination port, all in network order.
func (v RSSVector) Input(ports bool) []byte {
	in := append(v.Src.AsSlice(), v.Dst.AsSlice()...)
	if ports {
		in = binary.BigEndian.AppendUint16(in, v.SrcPort)
		in = binary.BigEndian.AppendUint16(in, v.DstPort)
	}
	return in
}

// RSSVectors returns the suite's published IPv4 and IPv6 rows.
func RSSVectors() []RSSVector {
	rows := []struct {
		src, dst       string
		sport, dport   uint16
		ipHash, l4Hash uint32
	}{
		{"66.9.149.187", "161.142.100.80", 2794, 1766, 0x323e8fc2, 0x51ccc178},
		{"199.92.111.2", "65.69.140.83", 14230, 4739, 0xd718262a, 0xc626b0ea},
		{"24.19.198.95", "12.22.207.184", 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
		{"38.27.205.30", "209.142.163.6", 48228, 2217, 0x82989176, 0xafc7327f},
		{"153.39.163.191", "202.188.127.2", 44251, 1303, 0x5d1809c5, 0x10e828a2},
		{"3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794, 1766, 0x2cc18cd5, 0x40207d3d},
		{"3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 14230, 4739, 0x0f0c461c, 0xdde51bbf},
		{"3ffe:1900:4545:3:200:f8ff:fe21:67cf", "fe80::200:f8ff:fe21:67cf", 44251, 38024, 0x4b61e985, 0x02d1feef},
	}
	vs := make([]RSSVector, len(rows))
	for i, r := range rows {
		vs[i] = RSSVector{
			Src: addr(r.src), Dst: addr(r.dst), SrcPort: r.sport, DstPort: r.dport,
			IPHash: r.ipHash, L4Hash: r.l4Hash,
		}
	}
	return vs
}

func addr(s string) tcpip.Address {
	return tcpip.AddrFromSlice(netip.MustParseAddr(s).AsSlice())
}
