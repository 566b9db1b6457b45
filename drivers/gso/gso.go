// Package gso segments TCP packets in software, for the times a driver was
// handed a GSO packet it cannot give to the hardware (TSO switched off
// after the stack chose the connection's GSO type), and inserts checksums
// for devices that cannot. Every segment it builds is a complete frame with
// its own IP id, length and checksum, TCP sequence number, flags and
// checksum: what TSO hardware would have put on the wire.
package gso

import (
	"encoding/binary"
	"fmt"

	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

const (
	etherLen   = 14
	vlanLen    = 4
	ipv4MinLen = 20
	ipv6Len    = 40
	tcpMinLen  = 20
	protoTCP   = 6

	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100

	tcpFlagFIN = 0x01
	tcpFlagPSH = 0x08
	tcpFlagCWR = 0x80
)

// Source is where a packet's bytes come from; *buffer.Buffer is one.
type Source interface {
	ReadAt(p []byte, off int64) (int, error)
	Size() int64
}

// Plan is a checked GSO packet: where its headers are and how it splits.
type Plan struct {
	Type     nic.GSOType
	MSS      int
	L2Len    int // Ethernet header, with a VLAN tag if present
	L3Len    int // IP header with options or IPv6 extension headers
	L4Len    int // TCP header with options
	Total    int // frame length
	Segments int
	hdr      [256]byte
}

// HeaderLen is the length of all headers, L2 to L4.
func (p *Plan) HeaderLen() int { return p.L2Len + p.L3Len + p.L4Len }

// Payload is the TCP payload length of the whole packet.
func (p *Plan) Payload() int { return p.Total - p.HeaderLen() }

// SegmentLen is the frame length of segment k.
func (p *Plan) SegmentLen(k int) int {
	n := p.Payload() - k*p.MSS
	return p.HeaderLen() + min(n, p.MSS)
}

// NewPlan reads and checks the headers of a GSO packet described by pkt.
// l3Len and l4Len come from the stack and must agree with the headers.
func NewPlan(src Source, typ nic.GSOType, mss, l3Len, l4Len int) (*Plan, error) {
	p := &Plan{Type: typ, MSS: mss, L3Len: l3Len, L4Len: l4Len, Total: int(src.Size())}
	if typ != nic.GSOTCPv4 && typ != nic.GSOTCPv6 {
		return nil, fmt.Errorf("gso: type %d is not TCP segmentation", typ)
	}
	if mss <= 0 {
		return nil, fmt.Errorf("gso: mss %d", mss)
	}
	n, _ := src.ReadAt(p.hdr[:min(len(p.hdr), p.Total)], 0)
	h := p.hdr[:n]
	if len(h) < etherLen {
		return nil, fmt.Errorf("gso: frame of %d bytes has no Ethernet header", p.Total)
	}
	p.L2Len = etherLen
	et := binary.BigEndian.Uint16(h[12:])
	if et == etherTypeVLAN {
		if len(h) < etherLen+vlanLen {
			return nil, fmt.Errorf("gso: truncated VLAN tag")
		}
		p.L2Len += vlanLen
		et = binary.BigEndian.Uint16(h[16:])
	}
	hl := p.HeaderLen()
	if l4Len < tcpMinLen || hl > len(h) {
		return nil, fmt.Errorf("gso: headers of %d+%d+%d bytes do not fit the frame (%d) or header space (%d)", p.L2Len, l3Len, l4Len, p.Total, len(p.hdr))
	}
	ip := h[p.L2Len:]
	switch typ {
	case nic.GSOTCPv4:
		if et != etherTypeIPv4 || ip[0]>>4 != 4 {
			return nil, fmt.Errorf("gso: tcpv4 packet is not IPv4 (ethertype %#04x, version %d)", et, ip[0]>>4)
		}
		if ihl := int(ip[0]&0xf) * 4; ihl != l3Len || ihl < ipv4MinLen {
			return nil, fmt.Errorf("gso: IPv4 header length %d, stack says %d", ihl, l3Len)
		}
		if ip[9] != protoTCP {
			return nil, fmt.Errorf("gso: IPv4 protocol %d is not TCP", ip[9])
		}
	case nic.GSOTCPv6:
		if et != etherTypeIPv6 || ip[0]>>4 != 6 {
			return nil, fmt.Errorf("gso: tcpv6 packet is not IPv6 (ethertype %#04x, version %d)", et, ip[0]>>4)
		}
		if l3Len < ipv6Len {
			return nil, fmt.Errorf("gso: IPv6 header length %d", l3Len)
		}
		if l3Len == ipv6Len && ip[6] != protoTCP {
			return nil, fmt.Errorf("gso: IPv6 next header %d is not TCP", ip[6])
		}
	}
	tcp := ip[l3Len:]
	if off := int(tcp[12]>>4) * 4; off != l4Len {
		return nil, fmt.Errorf("gso: TCP data offset %d, stack says %d", off, l4Len)
	}
	if p.Payload() <= 0 {
		return nil, fmt.Errorf("gso: no payload to segment")
	}
	p.Segments = (p.Payload() + mss - 1) / mss
	return p, nil
}

// Build writes segment k of the packet read from src into dst and returns
// the frame length.
func (p *Plan) Build(dst []byte, src Source, k int) (int, error) {
	if k < 0 || k >= p.Segments {
		return 0, fmt.Errorf("gso: segment %d of %d", k, p.Segments)
	}
	hl := p.HeaderLen()
	n := p.SegmentLen(k)
	if len(dst) < n {
		return 0, fmt.Errorf("gso: segment of %d bytes, room for %d", n, len(dst))
	}
	seg := dst[:n]
	copy(seg, p.hdr[:hl])
	if got, err := src.ReadAt(seg[hl:], int64(hl+k*p.MSS)); got != n-hl {
		return 0, fmt.Errorf("gso: read payload of segment %d: %d of %d bytes: %v", k, got, n-hl, err)
	}
	ip := seg[p.L2Len:]
	tcp := ip[p.L3Len:]
	tcpLen := n - hl + p.L4Len
	var pseudo uint16
	switch p.Type {
	case nic.GSOTCPv4:
		binary.BigEndian.PutUint16(ip[2:], uint16(p.L3Len+tcpLen))
		id := binary.BigEndian.Uint16(p.hdr[p.L2Len+4:])
		binary.BigEndian.PutUint16(ip[4:], id+uint16(k))
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], ^checksum.Checksum(ip[:p.L3Len], 0))
		pseudo = pseudoSum(ip[12:16], ip[16:20], tcpLen)
	case nic.GSOTCPv6:
		binary.BigEndian.PutUint16(ip[4:], uint16(p.L3Len-ipv6Len+tcpLen))
		pseudo = pseudoSum(ip[8:24], ip[24:40], tcpLen)
	}
	seq := binary.BigEndian.Uint32(p.hdr[hl-p.L4Len+4:])
	binary.BigEndian.PutUint32(tcp[4:], seq+uint32(k*p.MSS))
	flags := tcp[13]
	if k != p.Segments-1 {
		flags &^= tcpFlagFIN | tcpFlagPSH
	}
	if k != 0 {
		flags &^= tcpFlagCWR
	}
	tcp[13] = flags
	tcp[16], tcp[17] = 0, 0
	binary.BigEndian.PutUint16(tcp[16:], ^checksum.Checksum(tcp[:tcpLen], pseudo))
	return n, nil
}

func pseudoSum(src, dst []byte, tcpLen int) uint16 {
	s := checksum.Checksum(src, 0)
	s = checksum.Checksum(dst, s)
	var tail [4]byte
	binary.BigEndian.PutUint16(tail[0:], protoTCP)
	binary.BigEndian.PutUint16(tail[2:], uint16(tcpLen))
	return checksum.Checksum(tail[:], s)
}

// InsertChecksum completes a partial checksum the way a device would: the
// stack left the pseudo-header sum at start+offset, and the 16-bit
// one's-complement sum of frame[start:] goes there.
func InsertChecksum(frame []byte, start, offset int) error {
	at := start + offset
	if start < 0 || offset < 0 || at+2 > len(frame) {
		return fmt.Errorf("gso: checksum at %d+%d outside a %d-byte frame", start, offset, len(frame))
	}
	sum := ^checksum.Checksum(frame[start:], 0)
	if sum == 0 && offset == 6 {
		sum = 0xffff // UDP transmits zero as all ones
	}
	binary.BigEndian.PutUint16(frame[at:], sum)
	return nil
}

// Header returns the packet's headers, L2 to L4, as read by NewPlan. The
// slice is the plan's own copy; callers may modify it.
func (p *Plan) Header() []byte { return p.hdr[:p.HeaderLen()] }

// ForPacket plans a GSO packet handed to a driver: its headers checked,
// each segment's IP packet within mtu and, when it splits, each segment's
// frame within room, the bounce space a segment is built or sent from.
func ForPacket(p *nic.TxPacket, mtu, room int) (*Plan, error) {
	plan, err := NewPlan(&p.Data, p.GSO, int(p.MSS), int(p.L3Len), int(p.L4Len))
	if err != nil {
		return nil, err
	}
	if seg := plan.L3Len + plan.L4Len + plan.MSS; seg > mtu {
		return nil, fmt.Errorf("mss %d makes %d-byte IP packets, above mtu %d", plan.MSS, seg, mtu)
	}
	if plan.Segments > 1 && plan.HeaderLen()+plan.MSS > room {
		return nil, fmt.Errorf("segments of %d bytes exceed bounce space", plan.HeaderLen()+plan.MSS)
	}
	return plan, nil
}

// TSOHeader returns the headers as TSO hardware wants them, which fills in
// lengths and checksums per segment: IP length (and the IPv4 checksum)
// zero, the TCP checksum seeded with the pseudo-header sum taken without a
// length.
func (p *Plan) TSOHeader() []byte {
	hdr := p.Header()
	ip := hdr[p.L2Len:]
	tcp := ip[p.L3Len:]
	var pseudo uint16
	if p.Type == nic.GSOTCPv4 {
		binary.BigEndian.PutUint16(ip[2:], 0)
		binary.BigEndian.PutUint16(ip[10:], 0)
		pseudo = checksum.Checksum(ip[12:20], 0)
	} else {
		binary.BigEndian.PutUint16(ip[4:], 0)
		pseudo = checksum.Checksum(ip[8:40], 0)
	}
	binary.BigEndian.PutUint16(tcp[16:], checksum.Combine(pseudo, protoTCP))
	return hdr
}
