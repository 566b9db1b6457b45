package m82574

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
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
			if nicmodel.Sum(ip[:ihl]) != 0xffff {
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
		proto, l4, _ = nicmodel.IPv6Upper(ip[6], ip[40:40+plen])
	default:
		return o
	}
	if tuofl && l4 != nil {
		switch {
		case proto == nicmodel.ProtoTCP && len(l4) >= 20:
			o.status |= RxdTCPCS
			if nicmodel.L4Sum(src, dst, proto, l4) != 0xffff {
				o.errors |= RxdErrTCPE
			}
		case proto == nicmodel.ProtoUDP && len(l4) >= 8:
			o.status |= RxdUDPCS
			// An IPv4 UDP checksum of zero means none was sent.
			if (v6 || be.Uint16(l4[6:]) != 0) && nicmodel.L4Sum(src, dst, proto, l4) != 0xffff {
				o.errors |= RxdErrTCPE
			}
		}
	}
	if o.pcsd && s.mrqc&MrqcRSSEnable != 0 && src != nil {
		o.mrq, o.rss = rssHash(&e.key, s.mrqc, src, dst, proto, l4, v6)
	}
	return o
}

// rssHash is the Toeplitz hash over the addresses (and ports for TCP),
// as enabled in MRQC.
func rssHash(key *[40]byte, mrqc uint32, src, dst []byte, proto uint8, l4 []byte, v6 bool) (uint32, uint32) {
	var in [36]byte
	n := copy(in[:], src)
	n += copy(in[n:], dst)
	tcp := proto == nicmodel.ProtoTCP && len(l4) >= 4
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
	return typ, nicmodel.Toeplitz(key, in[:n])
}
