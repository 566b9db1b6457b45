package nicmodeltest

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// The addresses a Packet uses unless it names others.
var (
	IP4A = tcpip.AddrFrom4([4]byte{10, 0, 0, 1})
	IP4B = tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	IP6A = tcpip.AddrFrom16([16]byte{0xfd, 15: 1})
	IP6B = tcpip.AddrFrom16([16]byte{0xfd, 15: 2})
)

// Packet describes a test frame: Ethernet, IPv4 or IPv6, then TCP or UDP,
// built with gVisor's header package.
type Packet struct {
	Dst, Src         [6]byte
	V6               bool
	SrcIP, DstIP     tcpip.Address // zero: IP4A to IP4B, or IP6A to IP6B
	SrcPort, DstPort uint16        // zero: 40000 to 80 for TCP, 5000 to 53 for UDP
	ID               uint16        // IPv4 identification
	Seq, Ack         uint32        // TCP
	Flags            header.TCPFlags
	Payload          []byte

	// Offload leaves the checksums as a driver does for offload: the
	// IPv4 header checksum zero, the L4 field the pseudo-header sum with
	// PseudoLen as the length (zero for TSO, which adds each segment's).
	Offload   bool
	PseudoLen int
	// Pad pads the frame with zeros to the 60-byte minimum, as a sender
	// does.
	Pad bool
}

// TCP builds the frame with a TCP header (no options, window 65535).
func (p Packet) TCP() []byte {
	return p.build(header.TCPProtocolNumber, header.TCPMinimumSize, 40000, 80, func(l4 []byte, sport, dport uint16) {
		header.TCP(l4).Encode(&header.TCPFields{
			SrcPort: sport, DstPort: dport, SeqNum: p.Seq, AckNum: p.Ack,
			DataOffset: header.TCPMinimumSize, Flags: p.Flags, WindowSize: 65535,
		})
	})
}

// UDP builds the frame with a UDP header.
func (p Packet) UDP() []byte {
	return p.build(header.UDPProtocolNumber, header.UDPMinimumSize, 5000, 53, func(l4 []byte, sport, dport uint16) {
		header.UDP(l4).Encode(&header.UDPFields{SrcPort: sport, DstPort: dport, Length: uint16(len(l4))})
	})
}

func (p Packet) build(proto tcpip.TransportProtocolNumber, l4Len int, sport, dport uint16, encode func(l4 []byte, sport, dport uint16)) []byte {
	src, dst := p.SrcIP, p.DstIP
	ipLen, et := header.IPv4MinimumSize, header.IPv4ProtocolNumber
	if p.V6 {
		ipLen, et = header.IPv6MinimumSize, header.IPv6ProtocolNumber
	}
	if src.Len() == 0 {
		src, dst = IP4A, IP4B
		if p.V6 {
			src, dst = IP6A, IP6B
		}
	}
	if p.SrcPort != 0 || p.DstPort != 0 {
		sport, dport = p.SrcPort, p.DstPort
	}
	l := header.EthernetMinimumSize + ipLen + l4Len + len(p.Payload)
	f := Ethernet(p.Dst, p.Src, et, l)[:l]
	ip := f[header.EthernetMinimumSize:]
	l4 := ip[ipLen:]
	if p.V6 {
		header.IPv6(ip).Encode(&header.IPv6Fields{
			PayloadLength: uint16(len(l4)), TransportProtocol: proto,
			HopLimit: 64, SrcAddr: src, DstAddr: dst,
		})
	} else {
		h := header.IPv4(ip)
		h.Encode(&header.IPv4Fields{
			TotalLength: uint16(len(ip)), ID: p.ID, TTL: 64,
			Protocol: uint8(proto), SrcAddr: src, DstAddr: dst,
		})
		if !p.Offload {
			h.SetChecksum(^h.CalculateChecksum())
		}
	}
	copy(l4[l4Len:], p.Payload)
	encode(l4, sport, dport)
	csum := l4[6:8] // UDP
	if proto == header.TCPProtocolNumber {
		csum = l4[16:18]
	}
	if p.Offload {
		s := header.PseudoHeaderChecksum(proto, src, dst, uint16(p.PseudoLen))
		csum[0], csum[1] = byte(s>>8), byte(s)
	} else {
		s := ^checksum.Checksum(l4, header.PseudoHeaderChecksum(proto, src, dst, uint16(len(l4))))
		if proto == header.UDPProtocolNumber && s == 0 {
			s = 0xffff
		}
		csum[0], csum[1] = byte(s>>8), byte(s)
	}
	if p.Pad && len(f) < 60 {
		f = append(f, make([]byte, 60-len(f))...)
	}
	return f
}

// Ethernet returns an Ethernet header from src to dst of type typ, with
// room for capacity bytes in all.
func Ethernet(dst, src [6]byte, typ tcpip.NetworkProtocolNumber, capacity int) []byte {
	f := make([]byte, header.EthernetMinimumSize, max(capacity, header.EthernetMinimumSize))
	header.Ethernet(f).Encode(&header.EthernetFields{
		SrcAddr: tcpip.LinkAddress(src[:]), DstAddr: tcpip.LinkAddress(dst[:]), Type: typ,
	})
	return f
}

// Payload returns n bytes of a pattern that starts at seed.
func Payload(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*7)
	}
	return p
}
