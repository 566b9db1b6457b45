package mi225

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

const (
	ethHdrLen  = nicmodel.EthHdrLen
	vlanTagLen = nicmodel.VLANTagLen
)

// rxParse is what the receive parser learns of one frame.
type rxParse struct {
	ptype   uint32 // packet type bits
	status  uint32 // IPCS, L4I, UDPCS
	errors  uint32 // IPE, L4E
	hdrLen  int    // L2 to the end of the L4 header; 0 if not identified
	rssType uint32
	hash    uint32
	ipid    uint16 // IPv4 identification, reported without RXCSUM.PCSD
	fragSum uint16 // likewise: the unadjusted ones' complement sum of the IPv4 payload
}

// rxConf is the receive configuration the parser runs under.
type rxConf struct {
	rxcsum, mrqc uint32
	vet          uint16
	key          [40]byte
}

// parseRx parses the frame's L2..L4 headers, verifies the checksums
// RXCSUM enables and computes the RSS hash MRQC asks for. f is the frame
// as received (a VLAN tag, if any, still in it).
func parseRx(f []byte, c *rxConf) rxParse {
	var o rxParse
	p := nicmodel.Parse(f, c.vet)
	ipofl, tuofl := c.rxcsum&nicmodel.RxcsumIPOFL != 0, c.rxcsum&nicmodel.RxcsumTUOFL != 0
	switch {
	case p.IPv4 && !p.IPBad:
		o.ptype = PtypeIPv4
		if p.IPOpts {
			o.ptype = PtypeIPv4E
		}
		o.ipid = binary.BigEndian.Uint16(p.IPHdr[4:])
		if c.rxcsum&nicmodel.RxcsumPCSD == 0 {
			o.fragSum = checksum.Checksum(p.IPPayload, 0)
		}
	case p.IPv6:
		o.ptype = PtypeIPv6
		if p.IPOpts {
			o.ptype = PtypeIPv6E
		}
	default:
		return o
	}
	o.hdrLen = p.L4Off
	switch {
	case p.TCP():
		o.ptype |= PtypeTCP
		if doff := int(p.L4[12]>>4) * 4; doff >= 20 && doff <= len(p.L4) {
			o.hdrLen = p.L4Off + doff
		}
	case p.UDP():
		o.ptype |= PtypeUDP
		o.hdrLen = p.L4Off + 8
	}
	// A header the parser found bad went out above unchecked: the I225
	// reports checksums only on a packet it identified.
	ck := nicmodel.CheckRx(&p, ipofl, tuofl)
	if ck.IP {
		o.status |= RxdStaIPCS
	}
	if ck.IPBad {
		o.errors |= RxdErrIPE
	}
	if ck.L4 {
		o.status |= RxdStaL4I
	}
	if ck.UDP {
		o.status |= RxdStaUDPCS
	}
	if ck.L4Bad {
		o.errors |= RxdErrL4E
	}
	if c.mrqc&MrqcEnableMask == MrqcEnableRSS {
		o.rssType, o.hash = rssHash(&c.key, c.mrqc, &p)
	}
	return o
}

// rssHash is the Toeplitz hash over the addresses, and the ports for the
// TCP and UDP types MRQC enables.
func rssHash(key *[40]byte, mrqc uint32, p *nicmodel.Packet) (uint32, uint32) {
	var in [36]byte
	n := copy(in[:], p.Src)
	n += copy(in[n:], p.Dst)
	proto, v6, ports := p.Proto, p.IPv6, len(p.L4) >= 4
	var typ uint32
	switch {
	case !v6 && ports && proto == nicmodel.ProtoTCP && mrqc&nicmodel.MrqcTCPIPv4 != 0:
		typ = RSSTCPIPv4
	case !v6 && ports && proto == nicmodel.ProtoUDP && mrqc&nicmodel.MrqcUDPIPv4 != 0:
		typ = RSSUDPIPv4
	case !v6 && mrqc&nicmodel.MrqcIPv4 != 0:
		typ = RSSIPv4
	case v6 && ports && proto == nicmodel.ProtoTCP && mrqc&nicmodel.MrqcTCPIPv6 != 0:
		typ = RSSTCPIPv6
	case v6 && ports && proto == nicmodel.ProtoUDP && mrqc&nicmodel.MrqcUDPIPv6 != 0:
		typ = RSSUDPIPv6
	case v6 && mrqc&nicmodel.MrqcIPv6 != 0:
		typ = RSSIPv6
	default:
		return RSSNone, 0
	}
	switch typ {
	case RSSTCPIPv4, RSSUDPIPv4, RSSTCPIPv6, RSSUDPIPv6:
		n += copy(in[n:], p.L4[:4])
	}
	return typ, nicmodel.Toeplitz(key, in[:n])
}
