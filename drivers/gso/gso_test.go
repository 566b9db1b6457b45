package gso

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

var (
	src4 = tcpip.AddrFrom4([4]byte{192, 168, 7, 1})
	dst4 = tcpip.AddrFrom4([4]byte{192, 168, 7, 2})
	src6 = tcpip.AddrFrom16([16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	dst6 = tcpip.AddrFrom16([16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
)

const (
	seq0  = 0xfffff000 // wraps inside the packet
	id0   = 0xfffe     // wraps too
	tcpHL = 32         // with options
)

// tcpPacket builds an Ethernet frame carrying one TCP packet of payload, as
// the stack hands it to a GSO-capable driver.
func tcpPacket(v6 bool, payload []byte, flags header.TCPFlags) []byte {
	l3 := header.IPv4MinimumSize
	et := header.IPv4ProtocolNumber
	if v6 {
		l3, et = header.IPv6MinimumSize, header.IPv6ProtocolNumber
	}
	b := make([]byte, header.EthernetMinimumSize+l3+tcpHL+len(payload))
	header.Ethernet(b).Encode(&header.EthernetFields{SrcAddr: "\x02\x00\x00\x00\x00\x01", DstAddr: "\x02\x00\x00\x00\x00\x02", Type: et})
	ip := b[header.EthernetMinimumSize:]
	tcpLen := tcpHL + len(payload)
	var src, dst tcpip.Address
	if v6 {
		header.IPv6(ip).Encode(&header.IPv6Fields{PayloadLength: uint16(tcpLen), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64, SrcAddr: src6, DstAddr: dst6})
		src, dst = src6, dst6
	} else {
		header.IPv4(ip).Encode(&header.IPv4Fields{TotalLength: uint16(l3 + tcpLen), ID: id0, Flags: header.IPv4FlagDontFragment, TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src4, DstAddr: dst4})
		header.IPv4(ip).SetChecksum(^header.IPv4(ip).CalculateChecksum())
		src, dst = src4, dst4
	}
	tcp := header.TCP(ip[l3:])
	tcp.Encode(&header.TCPFields{SrcPort: 4000, DstPort: 80, SeqNum: seq0, AckNum: 77, DataOffset: tcpHL, Flags: flags, WindowSize: 1000})
	copy(tcp[header.TCPMinimumSize:tcpHL], []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}) // NOP NOP timestamps
	copy(tcp[tcpHL:], payload)
	// The stack leaves the pseudo-header sum (without length) for GSO.
	tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, 0))
	return b
}

func TestSegmentMatchesHeaderParsers(t *testing.T) {
	payload := make([]byte, 5000)
	for i := range payload {
		payload[i] = byte(i * 13)
	}
	for _, v6 := range []bool{false, true} {
		for _, mss := range []int{1, 536, 1448, 4999, 5000, 6000} {
			frame := tcpPacket(v6, payload, header.TCPFlagAck|header.TCPFlagPsh|header.TCPFlagFin|header.TCPFlagCwr)
			typ, l3 := nic.GSOTCPv4, header.IPv4MinimumSize
			if v6 {
				typ, l3 = nic.GSOTCPv6, header.IPv6MinimumSize
			}
			src := buffer.MakeWithData(frame)
			p, err := NewPlan(&src, typ, mss, l3, tcpHL)
			if err != nil {
				t.Fatal(err)
			}
			want := (len(payload) + mss - 1) / mss
			if p.Segments != want {
				t.Fatalf("v6 %v mss %d: %d segments, want %d", v6, mss, p.Segments, want)
			}
			var got []byte
			dst := make([]byte, 8192)
			for k := range p.Segments {
				n, err := p.Build(dst, &src, k)
				if err != nil {
					t.Fatal(err)
				}
				seg := dst[:n]
				if n > p.HeaderLen()+mss {
					t.Fatalf("segment %d is %d bytes, above mss %d", k, n, mss)
				}
				ip := seg[header.EthernetMinimumSize:]
				var tcp header.TCP
				var s, d tcpip.Address
				if v6 {
					h := header.IPv6(ip)
					if int(h.PayloadLength()) != n-header.EthernetMinimumSize-l3 {
						t.Fatalf("segment %d: IPv6 payload length %d", k, h.PayloadLength())
					}
					tcp, s, d = header.TCP(h.Payload()), h.SourceAddress(), h.DestinationAddress()
				} else {
					h := header.IPv4(ip)
					if !h.IsValid(len(ip)) || !h.IsChecksumValid() {
						t.Fatalf("segment %d: bad IPv4 header", k)
					}
					if int(h.TotalLength()) != len(ip) || h.ID() != uint16(id0+k) || h.Flags() != header.IPv4FlagDontFragment {
						t.Fatalf("segment %d: total %d id %#x flags %d", k, h.TotalLength(), h.ID(), h.Flags())
					}
					tcp, s, d = header.TCP(h.Payload()), h.SourceAddress(), h.DestinationAddress()
				}
				data := tcp.Payload()
				if !tcp.IsChecksumValid(s, d, checksum.Checksum(data, 0), uint16(len(data))) {
					t.Fatalf("v6 %v mss %d segment %d: bad TCP checksum", v6, mss, k)
				}
				if tcp.SequenceNumber() != uint32(seq0+k*mss) {
					t.Fatalf("segment %d: seq %#x", k, tcp.SequenceNumber())
				}
				f := tcp.Flags()
				last, first := k == p.Segments-1, k == 0
				if f.Contains(header.TCPFlagFin) != last || f.Contains(header.TCPFlagPsh) != last || f.Contains(header.TCPFlagCwr) != first || !f.Contains(header.TCPFlagAck) {
					t.Fatalf("segment %d/%d: flags %v", k, p.Segments, f)
				}
				if !bytes.Equal(tcp.Options(), frame[header.EthernetMinimumSize+l3+header.TCPMinimumSize:header.EthernetMinimumSize+l3+tcpHL]) {
					t.Fatalf("segment %d: options changed", k)
				}
				got = append(got, data...)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("v6 %v mss %d: payload differs after reassembly", v6, mss)
			}
		}
	}
}

func TestPlanRejectsBadHeaders(t *testing.T) {
	good := tcpPacket(false, make([]byte, 3000), header.TCPFlagAck)
	mut := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	cases := []struct {
		name        string
		frame       []byte
		typ         nic.GSOType
		mss, l3, l4 int
	}{
		{"not gso", good, nic.GSONone, 1000, 20, tcpHL},
		{"zero mss", good, nic.GSOTCPv4, 0, 20, tcpHL},
		{"wrong family", good, nic.GSOTCPv6, 1000, 40, tcpHL},
		{"ihl mismatch", good, nic.GSOTCPv4, 1000, 24, tcpHL},
		{"tcp offset mismatch", good, nic.GSOTCPv4, 1000, 20, 20},
		{"udp", mut(func(b []byte) { b[14+9] = 17 }), nic.GSOTCPv4, 1000, 20, tcpHL},
		{"truncated", good[:40], nic.GSOTCPv4, 1000, 20, tcpHL},
		{"no payload", good[:14+20+tcpHL], nic.GSOTCPv4, 1000, 20, tcpHL},
		{"short frame", good[:6], nic.GSOTCPv4, 1000, 20, tcpHL},
	}
	for _, c := range cases {
		src := buffer.MakeWithData(c.frame)
		if _, err := NewPlan(&src, c.typ, c.mss, c.l3, c.l4); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

func TestBuildRejectsSmallDestination(t *testing.T) {
	frame := tcpPacket(false, make([]byte, 3000), header.TCPFlagAck)
	src := buffer.MakeWithData(frame)
	p, err := NewPlan(&src, nic.GSOTCPv4, 1448, 20, tcpHL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Build(make([]byte, 100), &src, 0); err == nil {
		t.Error("built into a 100-byte buffer")
	}
	if _, err := p.Build(make([]byte, 2000), &src, p.Segments); err == nil {
		t.Error("built a segment past the end")
	}
}

func TestInsertChecksum(t *testing.T) {
	frame := tcpPacket(false, []byte("hello, checksum"), header.TCPFlagAck|header.TCPFlagPsh)
	ip := header.IPv4(frame[14:])
	tcp := header.TCP(ip.Payload())
	// Non-GSO convention: pseudo-header sum with the TCP length.
	tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src4, dst4, uint16(len(tcp))))
	if err := InsertChecksum(frame, 14+20, 16); err != nil {
		t.Fatal(err)
	}
	if !tcp.IsChecksumValid(src4, dst4, checksum.Checksum(tcp.Payload(), 0), uint16(len(tcp.Payload()))) {
		t.Error("checksum invalid after insertion")
	}
	if err := InsertChecksum(frame, len(frame)-1, 16); err == nil {
		t.Error("accepted an offset outside the frame")
	}
}
