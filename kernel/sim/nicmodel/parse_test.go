package nicmodel

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
)

func TestParse(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	tcp4 := nicmodeltest.Packet{Dst: mac, Payload: make([]byte, 10)}.TCP()
	p := Parse(tcp4, 0x8100)
	if !p.IPv4 || p.IPBad || p.Tagged || p.L3 != 14 || p.L4Off != 34 || !p.TCP() || len(p.L4) != 30 || len(p.IPHdr) != 20 {
		t.Errorf("IPv4/TCP: %+v", p)
	}

	// The same behind a VLAN tag.
	tagged := append(append(append([]byte{}, tcp4[:12]...), 0x81, 0x00, 0x00, 0x05), tcp4[12:]...)
	if p := Parse(tagged, 0x8100); !p.Tagged || p.L3 != 18 || !p.TCP() || p.L4Off != 38 {
		t.Errorf("tagged: %+v", p)
	}
	if p := Parse(tagged, 0x88a8); p.Tagged || p.IPv4 {
		t.Errorf("a tag of another type taken: %+v", p)
	}

	// A fragment has addresses but no segment.
	frag := append([]byte{}, tcp4...)
	frag[14+6] |= 0x20 // more fragments
	if p := Parse(frag, 0x8100); !p.IPv4 || p.Src == nil || p.L4 != nil || p.TCP() {
		t.Errorf("fragment: %+v", p)
	}

	// An IPv4 total length past the frame is bad.
	bad := append([]byte{}, tcp4...)
	bad[14+2] = 0xff
	if p := Parse(bad, 0x8100); !p.IPv4 || !p.IPBad || p.Src != nil {
		t.Errorf("bad lengths: %+v", p)
	}

	// IPv6 with a hop-by-hop header in front of UDP.
	udp6 := nicmodeltest.Packet{Dst: mac, V6: true, Payload: make([]byte, 4)}.UDP()
	ext := append(append([]byte{}, udp6[:54]...), ProtoUDP, 0, 0, 0, 0, 0, 0, 0)
	ext = append(ext, udp6[54:]...)
	ext[14+6] = 0  // next header: hop-by-hop
	ext[14+5] += 8 // payload length
	p = Parse(ext, 0x8100)
	if !p.IPv6 || !p.IPOpts || p.L4Off != 14+40+8 || !p.UDP() || len(p.L4) != 12 {
		t.Errorf("IPv6 with an extension header: %+v", p)
	}
	if p := Parse(ext[:10], 0x8100); p.IPv4 || p.IPv6 || p.L3 != 0 {
		t.Errorf("runt: %+v", p)
	}
}
