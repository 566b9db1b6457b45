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
	o.pcsd = s.rxcsum&nicmodel.RxcsumPCSD != 0
	ipofl, tuofl := s.rxcsum&nicmodel.RxcsumIPOFL != 0, s.rxcsum&nicmodel.RxcsumTUOFL != 0
	if !ipofl && !tuofl {
		o.status |= RxdIXSM
	}
	p := nicmodel.Parse(f, s.vet)
	c := nicmodel.CheckRx(&p, ipofl, tuofl)
	if c.IP {
		o.status |= RxdIPCS
	}
	if c.IPBad {
		o.errors |= RxdErrIPE
	}
	switch {
	case c.UDP:
		o.status |= RxdUDPCS
	case c.L4:
		o.status |= RxdTCPCS
	}
	if c.L4Bad {
		o.errors |= RxdErrTCPE
	}
	switch {
	case p.IPv4 && !p.IPBad:
		o.ipid = binary.BigEndian.Uint16(p.IPHdr[4:])
	case !p.IPv6:
		return o // no addresses to hash
	}
	if o.pcsd && s.mrqc&MrqcRSSEnable != 0 {
		o.mrq, o.rss = rssHash(&e.key, s.mrqc, &p)
	}
	return o
}

// rssHash is the Toeplitz hash over the addresses (and ports for TCP),
// as enabled in MRQC.
func rssHash(key *[40]byte, mrqc uint32, p *nicmodel.Packet) (uint32, uint32) {
	var in [36]byte
	n := copy(in[:], p.Src)
	n += copy(in[n:], p.Dst)
	tcp, v6 := p.TCP(), p.IPv6
	var typ uint32
	switch {
	case !v6 && tcp && mrqc&nicmodel.MrqcTCPIPv4 != 0:
		typ = rssTCPIPv4
	case !v6 && mrqc&nicmodel.MrqcIPv4 != 0:
		typ = rssIPv4
	case v6 && tcp && mrqc&nicmodel.MrqcTCPIPv6 != 0:
		typ = rssTCPIPv6
	case v6 && mrqc&nicmodel.MrqcIPv6 != 0:
		typ = rssIPv6
	default:
		return rssNone, 0
	}
	if typ == rssTCPIPv4 || typ == rssTCPIPv6 {
		n += copy(in[n:], p.L4[:4])
	}
	return typ, nicmodel.Toeplitz(key, in[:n])
}
