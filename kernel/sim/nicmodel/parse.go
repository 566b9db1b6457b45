package nicmodel

import "encoding/binary"

// Packet is what the receive parser of these parts finds in a frame: the
// headers the filters, the RSS hash and the checksum offloads look at.
type Packet struct {
	EtherType uint16 // after any VLAN tag
	Tagged    bool   // a VLAN tag of type VET follows the addresses
	L3        int    // offset of the IP header

	IPv4, IPv6 bool   // a whole IP header of that version
	IPBad      bool   // an IPv4 header whose lengths do not add up
	IPOpts     bool   // IPv4 options or IPv6 extension headers
	IPHdr      []byte // the IPv4 header, options included
	IPPayload  []byte // the IPv4 payload, to the total length
	Src, Dst   []byte // the addresses

	Proto uint8  // the upper-layer protocol
	L4Off int    // offset of the upper-layer header
	L4    []byte // the whole upper-layer segment; nil for a fragment
}

// TCP reports whether the packet holds a TCP header.
func (p *Packet) TCP() bool { return p.L4 != nil && p.Proto == ProtoTCP && len(p.L4) >= 20 }

// UDP reports whether the packet holds a UDP header.
func (p *Packet) UDP() bool { return p.L4 != nil && p.Proto == ProtoUDP && len(p.L4) >= 8 }

// Parse parses frame f (its VLAN tag, if any, still in it) through the
// IPv4 or IPv6 header, the IPv6 extension headers the hardware walks, to
// the TCP or UDP segment.
func Parse(f []byte, vet uint16) Packet {
	be := binary.BigEndian
	var p Packet
	if len(f) < EthHdrLen {
		return p
	}
	p.L3, p.EtherType = EthHdrLen, be.Uint16(f[12:])
	if Tagged(f, vet) {
		p.Tagged = true
		p.L3 += VLANTagLen
		p.EtherType = be.Uint16(f[16:])
	}
	ip := f[p.L3:]
	switch p.EtherType {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return p
		}
		p.IPv4 = true
		ihl := int(ip[0]&0xf) * 4
		total := int(be.Uint16(ip[2:]))
		if ihl < 20 || total < ihl || total > len(ip) {
			p.IPBad = true
			return p
		}
		p.IPHdr, p.IPPayload, p.IPOpts = ip[:ihl], ip[ihl:total], ihl > 20
		p.Src, p.Dst, p.Proto = ip[12:16], ip[16:20], ip[9]
		p.L4Off = p.L3 + ihl
		if be.Uint16(ip[6:])&0x3fff == 0 { // not a fragment
			p.L4 = p.IPPayload
		}
	case 0x86dd:
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return p
		}
		plen := int(be.Uint16(ip[4:]))
		if 40+plen > len(ip) {
			return p
		}
		p.IPv6 = true
		p.Src, p.Dst = ip[8:24], ip[24:40]
		var ext int
		p.Proto, p.L4, ext = IPv6Skip(ip[6], ip[40:40+plen])
		p.IPOpts, p.L4Off = ext > 0, p.L3+40+ext
	}
	return p
}
