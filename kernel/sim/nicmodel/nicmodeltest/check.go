package nicmodeltest

import (
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
