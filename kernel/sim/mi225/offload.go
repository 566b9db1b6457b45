package mi225

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

const (
	ethHdrLen  = 14
	vlanTagLen = 4
	protoTCP   = 6
	protoUDP   = 17
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
	be := binary.BigEndian
	if len(f) < ethHdrLen {
		return o
	}
	l3 := ethHdrLen
	et := be.Uint16(f[12:])
	if et == c.vet && len(f) >= ethHdrLen+vlanTagLen {
		l3 += vlanTagLen
		et = be.Uint16(f[16:])
	}
	ipofl, tuofl := c.rxcsum&RxcsumIPOFL != 0, c.rxcsum&RxcsumTUOFL != 0
	var (
		src, dst []byte
		proto    uint8
		l4       []byte
		l4off    int
		v6       bool
	)
	switch et {
	case 0x0800:
		ip := f[l3:]
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return o
		}
		ihl := int(ip[0]&0xf) * 4
		total := int(be.Uint16(ip[2:]))
		if ihl < 20 || total < ihl || total > len(ip) {
			return o
		}
		o.ptype = PtypeIPv4
		if ihl > 20 {
			o.ptype = PtypeIPv4E
		}
		o.ipid = be.Uint16(ip[4:])
		if c.rxcsum&RxcsumPCSD == 0 {
			o.fragSum = checksum.Checksum(ip[ihl:total], 0)
		}
		if ipofl {
			o.status |= RxdStaIPCS
			if checksum.Checksum(ip[:ihl], 0) != 0xffff {
				o.errors |= RxdErrIPE
			}
		}
		src, dst = ip[12:16], ip[16:20]
		o.hdrLen = l3 + ihl
		if be.Uint16(ip[6:])&0x3fff != 0 { // a fragment: no L4 header
			break
		}
		proto, l4, l4off = ip[9], ip[ihl:total], l3+ihl
	case 0x86dd:
		ip := f[l3:]
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return o
		}
		plen := int(be.Uint16(ip[4:]))
		if 40+plen > len(ip) {
			return o
		}
		src, dst, v6 = ip[8:24], ip[24:40], true
		o.ptype = PtypeIPv6
		var ext int
		proto, l4, ext = ipv6Upper(ip[6], ip[40:40+plen])
		if ext > 0 {
			o.ptype = PtypeIPv6E
		}
		o.hdrLen = l3 + 40 + ext
		l4off = o.hdrLen
	default:
		return o
	}
	switch {
	case proto == protoTCP && len(l4) >= 20:
		o.ptype |= PtypeTCP
		if doff := int(l4[12]>>4) * 4; doff >= 20 && doff <= len(l4) {
			o.hdrLen = l4off + doff
		}
		if tuofl {
			o.status |= RxdStaL4I
			if l4Sum(src, dst, proto, l4) != 0xffff {
				o.errors |= RxdErrL4E
			}
		}
	case proto == protoUDP && len(l4) >= 8:
		o.ptype |= PtypeUDP
		o.hdrLen = l4off + 8
		if tuofl {
			o.status |= RxdStaL4I | RxdStaUDPCS
			// An IPv4 UDP checksum of zero means none was sent.
			if (v6 || be.Uint16(l4[6:]) != 0) && l4Sum(src, dst, proto, l4) != 0xffff {
				o.errors |= RxdErrL4E
			}
		}
	}
	if c.mrqc&MrqcEnableMask == MrqcEnableRSS && src != nil {
		o.rssType, o.hash = rssHash(&c.key, c.mrqc, src, dst, proto, l4, v6)
	}
	return o
}

// ipv6Upper walks the extension headers the hardware parses (hop-by-hop,
// routing, destination options) to the upper-layer header and returns it
// with the length of the headers skipped. A fragment header stops it.
func ipv6Upper(next uint8, p []byte) (uint8, []byte, int) {
	skipped := 0
	for range 4 {
		switch next {
		case 0, 43, 60:
			if len(p) < 8 {
				return 0, nil, skipped
			}
			l := (int(p[1]) + 1) * 8
			if l > len(p) {
				return 0, nil, skipped
			}
			next, p, skipped = p[0], p[l:], skipped+l
		default:
			return next, p, skipped
		}
	}
	return 0, nil, skipped
}

// l4Sum is the ones' complement sum of the pseudo-header and segment; a
// correct segment sums to 0xffff.
func l4Sum(src, dst []byte, proto uint8, l4 []byte) uint16 {
	s := checksum.Checksum(src, 0)
	s = checksum.Checksum(dst, s)
	var ph [8]byte
	binary.BigEndian.PutUint32(ph[:], uint32(len(l4)))
	ph[7] = proto
	s = checksum.Checksum(ph[:], s)
	return checksum.Checksum(l4, s)
}

// rssHash is the Toeplitz hash over the addresses, and the ports for the
// TCP and UDP types MRQC enables.
func rssHash(key *[40]byte, mrqc uint32, src, dst []byte, proto uint8, l4 []byte, v6 bool) (uint32, uint32) {
	var in [36]byte
	n := copy(in[:], src)
	n += copy(in[n:], dst)
	ports := len(l4) >= 4
	var typ uint32
	switch {
	case !v6 && ports && proto == protoTCP && mrqc&MrqcTCPIPv4 != 0:
		typ = RSSTCPIPv4
	case !v6 && ports && proto == protoUDP && mrqc&MrqcUDPIPv4 != 0:
		typ = RSSUDPIPv4
	case !v6 && mrqc&MrqcIPv4 != 0:
		typ = RSSIPv4
	case v6 && ports && proto == protoTCP && mrqc&MrqcTCPIPv6 != 0:
		typ = RSSTCPIPv6
	case v6 && ports && proto == protoUDP && mrqc&MrqcUDPIPv6 != 0:
		typ = RSSUDPIPv6
	case v6 && mrqc&MrqcIPv6 != 0:
		typ = RSSIPv6
	default:
		return RSSNone, 0
	}
	switch typ {
	case RSSTCPIPv4, RSSUDPIPv4, RSSTCPIPv6, RSSUDPIPv6:
		n += copy(in[n:], l4[:4])
	}
	return typ, toeplitz(key, in[:n])
}

// toeplitz hashes input with the secret key: for every set input bit the
// 32 key bits starting at that bit position are XORed into the result.
func toeplitz(key *[40]byte, input []byte) uint32 {
	var h uint32
	window := binary.BigEndian.Uint32(key[0:4])
	for i, b := range input {
		for bit := 7; bit >= 0; bit-- {
			if b>>bit&1 != 0 {
				h ^= window
			}
			next := 32 + i*8 + (7 - bit)
			window <<= 1
			if next/8 < len(key) && key[next/8]>>(7-next%8)&1 != 0 {
				window |= 1
			}
		}
	}
	return h
}
