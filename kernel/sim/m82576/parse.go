package m82576

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// packet is what the receive parser finds in a frame: the same headers the
// filters, the hash and the checksum offloads look at.
type packet struct {
	et       uint16 // EtherType after any VLAN tag
	tagged   bool
	l3       int // offset of the IP header
	ipv4     bool
	ipv6     bool
	ipOpts   bool // IPv4 options or IPv6 extension headers
	ipBad    bool // an IPv4 header whose lengths do not add up
	ipHdr    []byte
	src, dst []byte
	proto    uint8
	l4       []byte // the whole TCP/UDP segment; nil for fragments
}

func (p *packet) tcp() bool { return p.l4 != nil && p.proto == nicmodel.ProtoTCP && len(p.l4) >= 20 }
func (p *packet) udp() bool { return p.l4 != nil && p.proto == nicmodel.ProtoUDP && len(p.l4) >= 8 }

// dstPort is the TCP or UDP destination port, if there is one.
func (p *packet) dstPort() (uint16, bool) {
	if !p.tcp() && !p.udp() {
		return 0, false
	}
	return binary.BigEndian.Uint16(p.l4[2:]), true
}

func parse(f []byte, vet uint16) packet {
	be := binary.BigEndian
	p := packet{l3: ethHdrLen, et: be.Uint16(f[12:])}
	if p.et == vet && len(f) >= ethHdrLen+vlanTagLen {
		p.tagged = true
		p.l3 += vlanTagLen
		p.et = be.Uint16(f[16:])
	}
	ip := f[p.l3:]
	switch p.et {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return p
		}
		p.ipv4 = true
		ihl := int(ip[0]&0xf) * 4
		total := int(be.Uint16(ip[2:]))
		if ihl < 20 || total < ihl || total > len(ip) {
			p.ipBad = true
			return p
		}
		p.ipHdr, p.ipOpts = ip[:ihl], ihl > 20
		p.src, p.dst, p.proto = ip[12:16], ip[16:20], ip[9]
		if be.Uint16(ip[6:])&0x3fff == 0 { // not a fragment
			p.l4 = ip[ihl:total]
		}
	case 0x86dd:
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return p
		}
		plen := int(be.Uint16(ip[4:]))
		if 40+plen > len(ip) {
			return p
		}
		p.ipv6 = true
		p.src, p.dst = ip[8:24], ip[24:40]
		p.proto, p.l4, p.ipOpts = nicmodel.IPv6Upper(ip[6], ip[40:40+plen])
	}
	return p
}
