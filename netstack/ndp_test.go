package netstack_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
)

// routerAdvert is an Ethernet frame carrying a router advertisement from
// fe80::1 to all nodes: a default router for lifetime seconds, prefix
// (on-link, autonomous) and one DNS server, written from RFC 4861
// section 4.2, 4.6.2 and RFC 8106 section 5.1.
func routerAdvert(src [6]byte, prefix netip.Prefix, dns netip.Addr, lifetime uint16) []byte {
	ra := make([]byte, 16)
	ra[0] = 134 // router advertisement
	ra[4] = 64  // cur hop limit
	binary.BigEndian.PutUint16(ra[6:], lifetime)
	pi := make([]byte, 32)
	pi[0], pi[1], pi[2], pi[3] = 3, 4, byte(prefix.Bits()), 0xc0 // L and A
	binary.BigEndian.PutUint32(pi[4:], 3600)
	binary.BigEndian.PutUint32(pi[8:], 1800)
	p := prefix.Addr().As16()
	copy(pi[16:], p[:])
	rd := make([]byte, 24)
	rd[0], rd[1] = 25, 3
	binary.BigEndian.PutUint32(rd[4:], 600)
	d := dns.As16()
	copy(rd[8:], d[:])
	icmp := append(append(ra, pi...), rd...)
	from := tcpip.AddrFrom16([16]byte{0xfe, 0x80, 15: 1})
	to := header.IPv6AllNodesMulticastAddress
	binary.BigEndian.PutUint16(icmp[2:], header.ICMPv6Checksum(header.ICMPv6ChecksumParams{
		Header: header.ICMPv6(icmp), Src: from, Dst: to, PayloadCsum: checksum.Checksum(nil, 0),
	}))
	ip := make([]byte, header.IPv6MinimumSize)
	header.IPv6(ip).Encode(&header.IPv6Fields{
		PayloadLength: uint16(len(icmp)), TransportProtocol: header.ICMPv6ProtocolNumber,
		HopLimit: 255, SrcAddr: from, DstAddr: to,
	})
	eth := make([]byte, 14)
	copy(eth, []byte{0x33, 0x33, 0, 0, 0, 1})
	copy(eth[6:], src[:])
	binary.BigEndian.PutUint16(eth[12:], uint16(ipv6.ProtocolNumber))
	return append(append(eth, ip...), icmp...)
}

// A NIC gets its link-local address at once, and from a router
// advertisement a SLAAC address in the prefix, the default route through
// the router and the DNS server.
func TestSLAACFromRouterAdvert(t *testing.T) {
	a := newFakeNIC("ether0", 1)
	logs := &logLines{}
	s, err := netstack.NewStack(netstack.StackOptions{Logf: logs.add}, netstack.Interface{NIC: a})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	has := func(p netip.Prefix) bool {
		for _, pa := range s.NICInfo()[netstack.NICID(0)].ProtocolAddresses {
			x, _ := netip.AddrFromSlice(pa.AddressWithPrefix.Address.AsSlice())
			if p.Contains(x) && pa.AddressWithPrefix.PrefixLen == p.Bits() {
				return true
			}
		}
		return false
	}
	// Link-local from the MAC (EUI-64): fe80::ff:fe00:1.
	if ll := netip.MustParsePrefix("fe80::ff:fe00:1/128"); !has(netip.PrefixFrom(ll.Addr(), 64)) {
		t.Fatalf("no link-local address: %v", s.NICInfo()[netstack.NICID(0)].ProtocolAddresses)
	}
	prefix := netip.MustParsePrefix("2001:db8:1::/64")
	dns := netip.MustParseAddr("2001:db8:1::53")
	a.inject(routerAdvert([6]byte{2, 0, 0, 0, 0, 9}, prefix, dns, 1800))
	eventually(t, "a SLAAC address in "+prefix.String(), func() bool { return has(prefix) })
	eventually(t, "the default route via fe80::1", func() bool {
		for _, r := range s.GetRouteTable() {
			if r.Destination.Prefix() == 0 && r.Gateway == tcpip.AddrFrom16([16]byte{0xfe, 0x80, 15: 1}) {
				return true
			}
		}
		return false
	})
	eventually(t, "the DNS server", func() bool {
		for _, d := range s.DNS() {
			if d == dns {
				return true
			}
		}
		return false
	})
}
