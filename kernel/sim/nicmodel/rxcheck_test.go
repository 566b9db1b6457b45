package nicmodel

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

func TestCheckRx(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	tcp4 := nicmodeltest.Packet{Dst: mac, Payload: []byte("abc")}.TCP()
	udp4 := nicmodeltest.Packet{Dst: mac, Payload: []byte("abc")}.UDP()
	udp6 := nicmodeltest.Packet{Dst: mac, V6: true, Payload: []byte("abc")}.UDP()
	corrupt := func(f []byte, at int) []byte {
		f = bytes.Clone(f)
		f[at] ^= 0x10
		return f
	}
	noSum := func(f []byte) []byte {
		f = bytes.Clone(f)
		f[14+20+6], f[14+20+7] = 0, 0
		return f
	}
	frag := bytes.Clone(tcp4)
	ip := header.IPv4(frag[14:])
	ip.SetFlagsFragmentOffset(header.IPv4FlagMoreFragments, 0)
	ip.SetChecksum(0)
	ip.SetChecksum(^ip.CalculateChecksum())
	badLen := bytes.Clone(tcp4)
	badLen[14+2] = 0xff
	cases := []struct {
		name   string
		f      []byte
		ip, l4 bool
		want   RxChecks
	}{
		{"TCPv4", tcp4, true, true, RxChecks{IP: true, L4: true}},
		{"TCPv4 offloads off", tcp4, false, false, RxChecks{}},
		{"TCPv4 IP only", tcp4, true, false, RxChecks{IP: true}},
		{"bad IPv4 header", corrupt(tcp4, 14+8), true, true, RxChecks{IP: true, IPBad: true, L4: true}},
		{"bad IPv4 lengths", badLen, true, true, RxChecks{IP: true, IPBad: true}},
		{"bad TCP", corrupt(tcp4, len(tcp4)-1), true, true, RxChecks{IP: true, L4: true, L4Bad: true}},
		{"fragment", frag, true, true, RxChecks{IP: true}},
		{"UDPv4", udp4, true, true, RxChecks{IP: true, L4: true, UDP: true}},
		{"bad UDPv4", corrupt(udp4, len(udp4)-1), true, true, RxChecks{IP: true, L4: true, UDP: true, L4Bad: true}},
		{"UDPv4 without checksum", noSum(udp4), true, true, RxChecks{IP: true, L4: true, UDP: true}},
		{"UDPv6", udp6, true, true, RxChecks{L4: true, UDP: true}},
		{"bad UDPv6", corrupt(udp6, len(udp6)-1), true, true, RxChecks{L4: true, UDP: true, L4Bad: true}},
	}
	for _, c := range cases {
		p := Parse(c.f, 0x8100)
		if got := CheckRx(&p, c.ip, c.l4); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestPacketChecksum(t *testing.T) {
	f := nicmodeltest.Packet{Dst: [6]byte{2}, Payload: nicmodeltest.Payload(33, 1)}.UDP()
	withFCS := append(bytes.Clone(f), 0xde, 0xad, 0xbe, 0xef)
	for _, start := range []int{0, 14, 15, len(f) - 1} {
		want := checksum.Checksum(f[start:], 0)
		if got := PacketChecksum(f, start, false); got != want {
			t.Errorf("from %d: %#x, want %#x", start, got, want)
		}
		if got := PacketChecksum(withFCS, start, true); got != want {
			t.Errorf("from %d, FCS kept: %#x, want %#x (the FCS summed)", start, got, want)
		}
	}
	if got := PacketChecksum(withFCS, len(f), true); got != 0 {
		t.Errorf("start at the FCS: %#x, want 0", got)
	}
	if got := PacketChecksum(f, 255, false); got != 0 {
		t.Errorf("start past the end: %#x, want 0", got)
	}
}

func TestPutLegacyRx(t *testing.T) {
	wb := bytes.Repeat([]byte{0xee}, DescLen)
	PutLegacyRx(wb, 0x1122334455667788, 0x05dc, 0xabcd, 0x03, 0x40, 0x2005)
	want := []byte{
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // buffer address
		0xdc, 0x05, 0xcd, 0xab, // length, packet checksum
		0x03, 0x40, 0x05, 0x20, // status, errors, VLAN tag
	}
	if !bytes.Equal(wb, want) {
		t.Errorf("% x, want % x", wb, want)
	}
}

func TestPutLegacyRxFrag(t *testing.T) {
	wb := bytes.Repeat([]byte{0xee}, DescLen)
	PutLegacyRxFrag(wb, 0x1000, 2048, 0xabcd, 0x60, 0x40, 0x2005, false)
	want := []byte{0, 0x10, 0, 0, 0, 0, 0, 0, 0x00, 0x08, 0xcd, 0xab, 0x01, 0, 0, 0} // DD only
	if !bytes.Equal(wb, want) {
		t.Errorf("first buffer: % x, want % x", wb, want)
	}
	PutLegacyRxFrag(wb, 0x1800, 100, 0xabcd, 0x60, 0x40, 0x2005, true)
	want = []byte{0, 0x18, 0, 0, 0, 0, 0, 0, 100, 0, 0xcd, 0xab, 0x63, 0x40, 0x05, 0x20} // DD, EOP, status, errors, tag
	if !bytes.Equal(wb, want) {
		t.Errorf("last buffer: % x, want % x", wb, want)
	}
}
