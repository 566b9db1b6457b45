package nicmodeltest

import (
	"encoding/binary"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestCsumCases checks each case's frame with gVisor's header package:
// the checksums are wrong exactly where the case says.
func TestCsumCases(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	cs := CsumCases(Packet{Dst: mac}, Packet{Dst: mac})
	if len(cs) != 11 {
		t.Fatalf("%d cases, want 11", len(cs))
	}
	for _, c := range cs {
		f := c.Frame
		if len(f) < 60 {
			t.Errorf("%s: %d bytes, below the minimum frame", c.Name, len(f))
		}
		ip := f[header.EthernetMinimumSize:]
		var l4 []byte
		var src, dst tcpip.Address
		ipOK := true
		if c.V6 {
			h := header.IPv6(ip)
			l4, src, dst = h.Payload(), h.SourceAddress(), h.DestinationAddress()
		} else {
			h := header.IPv4(ip)
			l4, src, dst = h.Payload(), h.SourceAddress(), h.DestinationAddress()
			ipOK = h.IsChecksumValid()
		}
		proto, field := header.TCPProtocolNumber, 16
		if c.UDP {
			proto, field = header.UDPProtocolNumber, 6
		}
		none := c.UDP && !c.V6 && binary.BigEndian.Uint16(l4[field:]) == 0
		l4OK := none || checksum.Checksum(l4, header.PseudoHeaderChecksum(proto, src, dst, uint16(len(l4)))) == 0xffff
		if c.BadIP == ipOK || c.BadL4 == l4OK || c.Good != (ipOK && l4OK) {
			t.Errorf("%s: header checksum right %v, L4 right %v; case says bad IP %v, bad L4 %v, good %v", c.Name, ipOK, l4OK, c.BadIP, c.BadL4, c.Good)
		}
		hdr := header.UDPMinimumSize
		if !c.UDP {
			hdr = header.TCPMinimumSize
		}
		if string(l4[hdr:]) != string(c.Payload) || string(c.Payload) != c.Name {
			t.Errorf("%s: payload %q", c.Name, l4[hdr:])
		}
	}
}
