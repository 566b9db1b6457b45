package nictest

import (
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// GSOID is the IPv4 identification of a packet GSOPacket builds.
const GSOID = 100

// GSOPacket is one GSO TCP packet as the stack hands it over: Ethernet,
// IPv4 (don't fragment, ID GSOID, checksummed) or IPv6, and TCP whose
// checksum field holds the pseudo-header sum, with payload bytes
// counting up from seq; MSS 1460 over IPv4, 1440 over IPv6. It returns
// the addresses the TCP checksum covers too.
func GSOPacket(v6 bool, seq uint32, payload int) (p *nic.TxPacket, src, dst tcpip.Address) {
	l3, et := header.IPv4MinimumSize, header.IPv4ProtocolNumber
	if v6 {
		l3, et = header.IPv6MinimumSize, header.IPv6ProtocolNumber
	}
	const l4 = header.TCPMinimumSize
	b := make([]byte, header.EthernetMinimumSize+l3+l4+payload)
	header.Ethernet(b).Encode(&header.EthernetFields{SrcAddr: "\x52\x54\x00\x12\x34\x56", DstAddr: "\x02\x00\x00\x00\x00\x09", Type: et})
	ip := b[header.EthernetMinimumSize:]
	if v6 {
		src, dst = tcpip.AddrFrom16([16]byte{0xfd, 15: 1}), tcpip.AddrFrom16([16]byte{0xfd, 15: 2})
		header.IPv6(ip).Encode(&header.IPv6Fields{PayloadLength: uint16(l4 + payload), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64, SrcAddr: src, DstAddr: dst})
	} else {
		src, dst = tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
		header.IPv4(ip).Encode(&header.IPv4Fields{TotalLength: uint16(l3 + l4 + payload), ID: GSOID, Flags: header.IPv4FlagDontFragment, TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
		header.IPv4(ip).SetChecksum(^header.IPv4(ip).CalculateChecksum())
	}
	tcp := header.TCP(ip[l3:])
	tcp.Encode(&header.TCPFields{SrcPort: 1234, DstPort: 80, SeqNum: seq, AckNum: 1, DataOffset: l4, Flags: header.TCPFlagAck | header.TCPFlagPsh, WindowSize: 1000})
	for i := range payload {
		tcp[l4+i] = byte(seq) + byte(i)
	}
	tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(l4+payload)))
	typ := nic.GSOTCPv4
	if v6 {
		typ = nic.GSOTCPv6
	}
	p = &nic.TxPacket{Data: buffer.MakeWithData(b), NeedsCsum: true, CsumStart: uint16(header.EthernetMinimumSize + l3), CsumOffset: 16,
		GSO: typ, MSS: uint16(GSOMSS(v6)), L3Len: uint16(l3), L4Len: l4}
	return p, src, dst
}

// GSOMSS is the segment size GSOPacket asks for: what fills a 1500-byte
// IP packet after the IP and TCP headers.
func GSOMSS(v6 bool) int {
	if v6 {
		return 1440
	}
	return 1460
}

// CheckGSO checks the frames one GSOPacket(v6, seq0, total) became:
// none above 1514 bytes, IPv4 header checksums right and IDs counting
// from GSOID, every TCP checksum right, sequence numbers continuous from
// seq0, every segment but the last carrying exactly GSOMSS(v6) payload
// bytes and the last the rest, so ceil(total/MSS) of them (a device or
// driver cutting short of the MSS sends more packets than the stack
// asked for), and the payload the packet's, total bytes of it.
func CheckGSO(t testing.TB, frames [][]byte, v6 bool, seq0 uint32, total int) {
	t.Helper()
	mss := GSOMSS(v6)
	segs := (total + mss - 1) / mss
	var stream []byte
	for i, f := range frames {
		if len(f) > 1514 {
			t.Fatalf("frame %d of %d bytes on the wire", i, len(f))
		}
		var tcp header.TCP
		var src, dst tcpip.Address
		if v6 {
			ip := header.IPv6(f[header.EthernetMinimumSize:])
			tcp, src, dst = header.TCP(ip.Payload()), ip.SourceAddress(), ip.DestinationAddress()
		} else {
			ip := header.IPv4(f[header.EthernetMinimumSize:])
			if !ip.IsChecksumValid() || ip.ID() != uint16(GSOID+i) {
				t.Fatalf("frame %d: IPv4 checksum valid %v, id %d", i, ip.IsChecksumValid(), ip.ID())
			}
			tcp, src, dst = header.TCP(ip.Payload()), ip.SourceAddress(), ip.DestinationAddress()
		}
		data := tcp.Payload()
		if !tcp.IsChecksumValid(src, dst, checksum.Checksum(data, 0), uint16(len(data))) {
			t.Fatalf("frame %d: TCP checksum", i)
		}
		if tcp.SequenceNumber() != seq0+uint32(len(stream)) {
			t.Fatalf("frame %d: seq %d, want %d", i, tcp.SequenceNumber(), seq0+uint32(len(stream)))
		}
		if want := min(mss, total-len(stream)); len(data) != want {
			t.Fatalf("frame %d of %d carries %d payload bytes, want %d: %d bytes cut at MSS %d are %d segments", i, len(frames), len(data), want, total, mss, segs)
		}
		stream = append(stream, data...)
	}
	if len(frames) != segs {
		t.Fatalf("%d segments on the wire, want %d: %d payload bytes cut at MSS %d", len(frames), segs, total, mss)
	}
	if len(stream) != total {
		t.Fatalf("%d payload bytes on the wire, want %d", len(stream), total)
	}
	for i, c := range stream {
		if c != byte(seq0)+byte(i) {
			t.Fatalf("payload byte %d", i)
		}
	}
}

// Wire is the far end of a NIC's wire, keeping what arrives
// (testhost.Peer).
type Wire interface {
	Frames() [][]byte
	Len() int
	Reset()
}

// maxTouches bounds the reclaims TransmitGSO makes while waiting for the
// segments: a model that defers its transmit work does a few
// descriptors per touch of the queue.
const maxTouches = 10000

// TransmitGSO sends GSOPacket(v6, seq0, total) on q, reclaims until the
// segments it should become have reached w (each reclaim touches the
// queue, which lets a deferring model go on), and checks them with
// CheckGSO.
func TransmitGSO(t testing.TB, q nic.Queue, w Wire, v6 bool, seq0 uint32, total int) {
	t.Helper()
	w.Reset()
	p, _, _ := GSOPacket(v6, seq0, total)
	if n, err := q.Transmit([]*nic.TxPacket{p}); n != 1 || err != nil {
		t.Fatalf("transmit a GSO packet of %d payload bytes: took %d, %v", total, n, err)
	}
	segs := (total + GSOMSS(v6) - 1) / GSOMSS(v6)
	touches := 0
	for ; w.Len() < segs && touches < maxTouches; touches++ {
		q.Reclaim()
	}
	if w.Len() < segs {
		t.Fatalf("%d of %d segments on the wire after %d reclaims", w.Len(), segs, touches)
	}
	q.Reclaim()
	CheckGSO(t, w.Frames(), v6, seq0, total)
}
