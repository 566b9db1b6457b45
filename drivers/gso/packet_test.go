package gso

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// txPacket is a GSO packet whose TCP checksum holds a full sum, not the
// pseudo-header seed, so TSOHeader has to rewrite it.
func txPacket(v6 bool, payload int, mss int) *nic.TxPacket {
	b := tcpPacket(v6, make([]byte, payload), header.TCPFlagAck)
	l3 := header.IPv4MinimumSize
	if v6 {
		l3 = header.IPv6MinimumSize
	}
	header.TCP(b[header.EthernetMinimumSize+l3:]).SetChecksum(0x1234)
	p := &nic.TxPacket{Data: buffer.MakeWithData(b), GSO: nic.GSOTCPv4, MSS: uint16(mss), L3Len: header.IPv4MinimumSize, L4Len: tcpHL}
	if v6 {
		p.GSO, p.L3Len = nic.GSOTCPv6, header.IPv6MinimumSize
	}
	return p
}

func TestForPacketLimits(t *testing.T) {
	for _, c := range []struct {
		name      string
		mss, mtu  int
		room      int
		wantError string
	}{
		{"fits", 1000, 1500, 2048, ""},
		{"mss above mtu", 1460, 1400, 2048, "above mtu"},
		{"segment above bounce space", 1400, 1500, 1024, "bounce space"},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := ForPacket(txPacket(false, 3000, c.mss), c.mtu, c.room)
			switch {
			case c.wantError == "" && err != nil:
				t.Fatalf("ForPacket: %v", err)
			case c.wantError != "" && (err == nil || !strings.Contains(err.Error(), c.wantError)):
				t.Fatalf("ForPacket error %v, want one about %q", err, c.wantError)
			case err == nil && plan.Segments != 3:
				t.Fatalf("%d segments, want 3", plan.Segments)
			}
		})
	}
}

func TestTSOHeaderSeedsPseudoHeader(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		p := txPacket(v6, 3000, 1000)
		plan, err := ForPacket(p, 1500, 2048)
		if err != nil {
			t.Fatal(err)
		}
		hdr := plan.TSOHeader()
		eth := header.EthernetMinimumSize
		var src, dst tcpip.Address
		if v6 {
			ip := header.IPv6(hdr[eth:])
			if ip.PayloadLength() != 0 {
				t.Errorf("v6: payload length %d, want 0", ip.PayloadLength())
			}
			src, dst = ip.SourceAddress(), ip.DestinationAddress()
		} else {
			ip := header.IPv4(hdr[eth:])
			if ip.TotalLength() != 0 || ip.Checksum() != 0 {
				t.Errorf("v4: total length %d checksum %#x, want both 0", ip.TotalLength(), ip.Checksum())
			}
			src, dst = ip.SourceAddress(), ip.DestinationAddress()
		}
		tcp := header.TCP(hdr[eth+int(p.L3Len):])
		if want := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, 0); tcp.Checksum() != want {
			t.Errorf("v6 %v: tcp checksum %#x, want pseudo-header sum %#x", v6, tcp.Checksum(), want)
		}
		if len(hdr) != plan.HeaderLen() {
			t.Errorf("v6 %v: header of %d bytes, want %d", v6, len(hdr), plan.HeaderLen())
		}
	}
}
