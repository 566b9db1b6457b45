package udpframe

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestPutParses checks a frame with gVisor's own header views: the
// addresses, lengths and both checksums as a receiver would verify them.
func TestPutParses(t *testing.T) {
	f := Flow{
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		Src: [4]byte{10, 0, 2, 2}, Dst: [4]byte{10, 0, 2, 15},
		SrcPort: 40000, DstPort: 9,
	}
	for _, n := range []int{HeaderLen, 60, 1514} {
		fr := f.Put(make([]byte, 2048), n)
		for i := HeaderLen; i < n; i++ {
			fr[i] = byte(i * 7)
		}
		SetChecksum(fr)
		if len(fr) != n {
			t.Fatalf("n %d: frame of %d bytes", n, len(fr))
		}
		eth := header.Ethernet(fr)
		if eth.SourceAddress() != tcpip.LinkAddress(f.SrcMAC[:]) || eth.DestinationAddress() != tcpip.LinkAddress(f.DstMAC[:]) || eth.Type() != header.IPv4ProtocolNumber {
			t.Fatalf("n %d: ethernet %x", n, fr[:14])
		}
		ip := header.IPv4(fr[14:])
		if !ip.IsValid(n-14) || !ip.IsChecksumValid() {
			t.Fatalf("n %d: IPv4 header invalid or checksum bad: %x", n, fr[14:34])
		}
		if ip.SourceAddress() != tcpip.AddrFrom4(f.Src) || ip.DestinationAddress() != tcpip.AddrFrom4(f.Dst) || ip.TransportProtocol() != header.UDPProtocolNumber {
			t.Fatalf("n %d: IPv4 addresses or protocol: %x", n, fr[14:34])
		}
		u := header.UDP(ip.Payload())
		if u.SourcePort() != f.SrcPort || u.DestinationPort() != f.DstPort || int(u.Length()) != n-34 {
			t.Fatalf("n %d: UDP ports or length: %x", n, fr[34:42])
		}
		if !u.IsChecksumValid(ip.SourceAddress(), ip.DestinationAddress(), checksumOf(u.Payload())) {
			t.Fatalf("n %d: UDP checksum %#x does not verify", n, u.Checksum())
		}
	}
}

func checksumOf(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum>>16 + sum&0xffff
	}
	return uint16(sum)
}
