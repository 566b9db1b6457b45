package m82574

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

// rxResult is what the receive offloads report for one frame.
type rxResult struct {
	status  uint32 // IXSM, IPCS, TCPCS, UDPCS (VP is added by the caller)
	errors  uint32 // IPE, TCPE
	ipid    uint16
	pktCsum uint16
	pcsd    bool
	mrq     uint32 // RSS type in bits 3:0
	rss     uint32
}

// RSS types reported in the MRQ field.
const (
	rssNone    = 0
	rssTCPIPv4 = 1
	rssIPv4    = 2
	rssTCPIPv6 = 3
	rssIPv6    = 5
)

const (
	protoTCP = 6
	protoUDP = 17
)

func checksumOf(b []byte) uint16 { return checksum.Checksum(b, 0) }

// rxOffload parses the frame's IP and TCP/UDP headers and verifies the
// checksums RXCSUM asks for; with RXCSUM.PCSD it computes the RSS hash
// instead of reporting the IP identification.
func rxOffload(f []byte, s rxSetup, e *rxEngine) rxResult {
	var o rxResult
	o.pcsd = s.rxcsum&RxcsumPCSD != 0
	ipofl, tuofl := s.rxcsum&RxcsumIPOFL != 0, s.rxcsum&RxcsumTUOFL != 0
	if !ipofl && !tuofl {
		o.status |= RxdIXSM
	}
	be := binary.BigEndian
	l3 := ethHdrLen
	et := be.Uint16(f[12:])
	if et == s.vet && len(f) >= ethHdrLen+vlanTagLen {
		l3 += vlanTagLen
		et = be.Uint16(f[16:])
	}
	var (
		src, dst []byte
		proto    uint8
		l4       []byte
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
			if ipofl {
				o.status |= RxdIPCS
				o.errors |= RxdErrIPE
			}
			return o
		}
		o.ipid = be.Uint16(ip[4:])
		if ipofl {
			o.status |= RxdIPCS
			if checksumOf(ip[:ihl]) != 0xffff {
				o.errors |= RxdErrIPE
			}
		}
		src, dst = ip[12:16], ip[16:20]
		if be.Uint16(ip[6:])&0x3fff != 0 { // a fragment: no L4 header to check
			break
		}
		proto, l4 = ip[9], ip[ihl:total]
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
		proto, l4 = ipv6Upper(ip[6], ip[40:40+plen])
	default:
		return o
	}
	if tuofl && l4 != nil {
		switch {
		case proto == protoTCP && len(l4) >= 20:
			o.status |= RxdTCPCS
			if l4Sum(src, dst, proto, l4) != 0xffff {
				o.errors |= RxdErrTCPE
			}
		case proto == protoUDP && len(l4) >= 8:
			o.status |= RxdUDPCS
			// An IPv4 UDP checksum of zero means none was sent.
			if (v6 || be.Uint16(l4[6:]) != 0) && l4Sum(src, dst, proto, l4) != 0xffff {
				o.errors |= RxdErrTCPE
			}
		}
	}
	if o.pcsd && s.mrqc&MrqcRSSEnable != 0 && src != nil {
		o.mrq, o.rss = rssHash(&e.key, s.mrqc, src, dst, proto, l4, v6)
	}
	return o
}

// ipv6Upper walks the extension headers the hardware parses (hop-by-hop,
// routing, destination options) to the upper-layer header. A fragment
// header stops it: there is no whole L4 header to check.
func ipv6Upper(next uint8, p []byte) (uint8, []byte) {
	for range 4 {
		switch next {
		case 0, 43, 60:
			if len(p) < 8 {
				return 0, nil
			}
			l := (int(p[1]) + 1) * 8
			if l > len(p) {
				return 0, nil
			}
			next, p = p[0], p[l:]
		default:
			return next, p
		}
	}
	return 0, nil
}

// l4Sum is the ones' complement sum of the pseudo-header and segment; a
// correct segment sums to 0xffff.
func l4Sum(src, dst []byte, proto uint8, l4 []byte) uint16 {
	s := checksum.Checksum(src, 0)
	s = checksum.Checksum(dst, s)
	var ph [4]byte
	if len(src) == 16 {
		binary.BigEndian.PutUint32(ph[:], uint32(len(l4)))
		s = checksum.Checksum(ph[:], s)
		ph = [4]byte{0, 0, 0, proto}
		s = checksum.Checksum(ph[:], s)
	} else {
		ph = [4]byte{0, proto, byte(len(l4) >> 8), byte(len(l4))}
		s = checksum.Checksum(ph[:], s)
	}
	return checksum.Checksum(l4, s)
}

// rssHash is the Toeplitz hash over the addresses (and ports for TCP),
// as enabled in MRQC.
func rssHash(key *[40]byte, mrqc uint32, src, dst []byte, proto uint8, l4 []byte, v6 bool) (uint32, uint32) {
	var in [36]byte
	n := copy(in[:], src)
	n += copy(in[n:], dst)
	tcp := proto == protoTCP && len(l4) >= 4
	var typ uint32
	switch {
	case !v6 && tcp && mrqc&MrqcTCPIPv4 != 0:
		typ = rssTCPIPv4
	case !v6 && mrqc&MrqcIPv4 != 0:
		typ = rssIPv4
	case v6 && tcp && mrqc&MrqcTCPIPv6 != 0:
		typ = rssTCPIPv6
	case v6 && mrqc&MrqcIPv6 != 0:
		typ = rssIPv6
	default:
		return rssNone, 0
	}
	if typ == rssTCPIPv4 || typ == rssTCPIPv6 {
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
