package netstack_test

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// frames packs frames for FuzzReceive: each behind its length, two bytes.
func frames(fs ...[]byte) []byte {
	var b []byte
	for _, f := range fs {
		b = binary.BigEndian.AppendUint16(b, uint16(len(f)))
		b = append(b, f...)
	}
	return b
}

// FuzzReceive gives the receive path what the wire may carry, vouched
// for by the device or not, through GRO or not: the poll never panics,
// and no datagram reaches the stack with bytes past the length its IP
// header gives (the padding GRO once merged into a stream).
func FuzzReceive(f *testing.F) {
	mac := newFakeNIC("ether0", 1).MAC() // the address newGRORig's endpoint answers to
	seg := func(seq uint32, n int) []byte {
		return tcpFrame([6]byte{2, 0, 0, 0, 0, 9}, mac, addrB.Addr(), addrA.Addr(), tcpSeg{seq: seq, flags: header.TCPFlagAck, data: payload(int(seq), n)})
	}
	probe := append(seg(3000, 1), 0, 0, 0, 0, 0)
	long := seg(100, 40)
	binary.BigEndian.PutUint16(long[header.EthernetMinimumSize+2:], 2000) // longer than the frame
	short := seg(100, 40)
	binary.BigEndian.PutUint16(short[header.EthernetMinimumSize+2:], 10) // shorter than a header
	f.Add(frames(seg(1000, 1000), seg(2000, 1000), probe), true, false)
	f.Add(frames(seg(1000, 1000), probe, seg(3001, 1000)), false, false)
	f.Add(frames(probe, long, short, seg(100, 0)[:30]), true, true)
	f.Fuzz(func(t *testing.T, b []byte, vouched, noGRO bool) {
		rig := newGRORig(t, false, netstack.Options{NoGRO: noGRO})
		for k := 0; k < 16 && len(b) >= 2; k++ {
			n := min(int(binary.BigEndian.Uint16(b)), len(b)-2)
			fr := append([]byte(nil), b[2:2+n]...)
			b = b[2+n:]
			if vouched {
				injectVouched(rig.n, fr)
			} else {
				injectUnverified(rig.n, fr)
			}
			var proto uint16 // the datagrams the endpoint trims
			if len(fr) >= header.EthernetMinimumSize {
				proto = binary.BigEndian.Uint16(fr[12:])
			}
			for _, p := range rig.poll(t) {
				switch {
				case proto == uint16(header.IPv4ProtocolNumber) && len(p) >= header.IPv4MinimumSize:
					if tl := int(header.IPv4(p).TotalLength()); tl >= header.IPv4MinimumSize && len(p) > tl {
						t.Fatalf("a %d-byte IPv4 packet of total length %d went up", len(p), tl)
					}
				case proto == uint16(header.IPv6ProtocolNumber) && len(p) >= header.IPv6MinimumSize:
					if pl := int(header.IPv6(p).PayloadLength()); pl > 0 && len(p) > header.IPv6MinimumSize+pl {
						t.Fatalf("a %d-byte IPv6 packet of payload length %d went up", len(p), pl)
					}
				}
			}
		}
	})
}
