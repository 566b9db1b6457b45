package nicmodeltest

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// CheckL4 verifies, with gVisor's header package and independently of any
// model, that frame f is an untagged IPv4 (or with v6, IPv6) packet with
// a valid IPv4 header checksum and a valid TCP or UDP checksum. It
// returns the TCP or UDP segment.
func CheckL4(t testing.TB, f []byte, v6 bool) []byte {
	t.Helper()
	if len(f) < header.EthernetMinimumSize {
		t.Fatalf("a %d-byte frame", len(f))
	}
	var (
		l4  []byte
		sum uint16
	)
	switch et := header.Ethernet(f).Type(); {
	case v6 && et == header.IPv6ProtocolNumber:
		ip := header.IPv6(f[header.EthernetMinimumSize:])
		if !ip.IsValid(len(ip)) {
			t.Fatal("invalid IPv6 header")
		}
		l4 = ip.Payload()
		sum = header.PseudoHeaderChecksum(ip.TransportProtocol(), ip.SourceAddress(), ip.DestinationAddress(), uint16(len(l4)))
		if p := ip.TransportProtocol(); p != header.TCPProtocolNumber && p != header.UDPProtocolNumber {
			t.Fatalf("IPv6 next header %d", p)
		}
	case !v6 && et == header.IPv4ProtocolNumber:
		ip := header.IPv4(f[header.EthernetMinimumSize:])
		if !ip.IsValid(len(ip)) {
			t.Fatal("invalid IPv4 header")
		}
		if !ip.IsChecksumValid() {
			t.Fatalf("bad IPv4 header checksum %#04x", ip.Checksum())
		}
		l4 = ip.Payload()
		sum = header.PseudoHeaderChecksum(ip.TransportProtocol(), ip.SourceAddress(), ip.DestinationAddress(), uint16(len(l4)))
		if p := ip.TransportProtocol(); p != header.TCPProtocolNumber && p != header.UDPProtocolNumber {
			t.Fatalf("IPv4 protocol %d", p)
		}
	default:
		t.Fatalf("EtherType %#04x, want IPv6 %v", et, v6)
	}
	if checksum.Checksum(l4, sum) != 0xffff {
		t.Fatalf("bad TCP or UDP checksum in % x", l4[:min(len(l4), 20)])
	}
	return l4
}

// TSOCase is what a TCP packet handed to segmentation held.
type TSOCase struct {
	V6      bool
	MSS     int
	Seq     uint32          // the first sequence number
	ID      uint16          // IPv4: the first identification
	Flags   header.TCPFlags // the packet's flags
	Payload []byte
}

// CheckSegments verifies, independently of any model, the frames
// segmentation cut from c's packet: as many as MSS-sized pieces of the
// payload take, each a whole packet by CheckL4 with its IP length right,
// the IPv4 identification counting up from c.ID, sequence numbers
// following the payload, FIN and PSH kept for the last segment and CWR
// for the first; the pieces, in order, are the payload.
func CheckSegments(t testing.TB, frames [][]byte, c TSOCase) {
	t.Helper()
	if want := (len(c.Payload) + c.MSS - 1) / c.MSS; len(frames) != want {
		t.Fatalf("%d segments, want %d", len(frames), want)
	}
	var got []byte
	for i, f := range frames {
		tcp := header.TCP(CheckL4(t, f, c.V6))
		ip := f[header.EthernetMinimumSize:]
		if c.V6 {
			if l := int(header.IPv6(ip).PayloadLength()); l != len(tcp) {
				t.Fatalf("segment %d: IPv6 payload length %d, want %d", i, l, len(tcp))
			}
		} else {
			h := header.IPv4(ip)
			if int(h.TotalLength()) != len(ip) || h.ID() != c.ID+uint16(i) {
				t.Fatalf("segment %d: IPv4 length %d of %d, id %#x, want %#x", i, h.TotalLength(), len(ip), h.ID(), c.ID+uint16(i))
			}
		}
		last := i == len(frames)-1
		if n := len(tcp.Payload()); n > c.MSS || !last && n != c.MSS {
			t.Fatalf("segment %d: %d bytes of payload, MSS %d", i, n, c.MSS)
		}
		if s := tcp.SequenceNumber(); s != c.Seq+uint32(len(got)) {
			t.Fatalf("segment %d: seq %d, want %d", i, s, c.Seq+uint32(len(got)))
		}
		want := c.Flags
		if !last {
			want &^= header.TCPFlagFin | header.TCPFlagPsh
		}
		if i > 0 {
			want &^= header.TCPFlagCwr
		}
		if fl := tcp.Flags(); fl != want {
			t.Fatalf("segment %d of %d: flags %v, want %v", i, len(frames), fl, want)
		}
		got = append(got, tcp.Payload()...)
	}
	if !bytes.Equal(got, c.Payload) {
		t.Fatal("the segments do not carry the payload in order")
	}
}
