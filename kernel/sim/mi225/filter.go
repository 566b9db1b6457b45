package mi225

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// The receive queue filters. In the receive queue assignment the MAC
// address filters' queue selection comes first, then the EtherType
// filters, then the 2-tuple filters, and RSS only for frames none of them
// placed.

// EtherType queue filters (ETQF[0..7]). A filter with Filter Enable set
// matches a frame whose EtherType (the one after a VLAN tag, if the frame
// carries one) equals its EType field; with Queue Enable set too, the
// frame goes to the filter's Rx Queue. When several filters match, the
// last one decides.
const (
	ETQF     = 0x05cb0 // + 4n
	etqfRegs = 8

	EtqfETypeMask    = 0xffff
	EtqfQueueShift   = 16
	EtqfQueueMask    = 7 << EtqfQueueShift
	EtqfFilterEnable = 1 << 26
	Etqf1588         = 1 << 27 // time stamp matching frames (not modelled)
	EtqfImmediateInt = 1 << 29 // immediate interrupt (not modelled)
	EtqfQueueEnable  = 1 << 31
)

// 2-tuple queue filters: filter n is TTQF[n] (IP protocol, queue enable,
// Rx Queue, the protocol bypass), IMIR[n] (TCP or UDP destination port,
// the port bypass, priority) and IMIREXT[n] (length threshold and TCP
// flags, each with its bypass). A filter whose Queue Enable is set
// matches an unfragmented IPv4 or IPv6 TCP or UDP frame when every field
// not bypassed matches; the port is compared as it appears on the wire,
// its first byte in the register's low byte. Among matching filters the
// highest priority decides, and of equal ones the lowest numbered.
const (
	TTQF     = 0x059e0 // + 4n
	IMIR     = 0x05a80 // + 4n
	IMIREXT  = 0x05aa0 // + 4n
	ttqfRegs = 8

	TtqfProtocolMask   = 0xff
	TtqfQueueEnable    = 1 << 8
	TtqfQueueShift     = 16
	TtqfQueueMask      = 7 << TtqfQueueShift
	TtqfMaskProtocolBP = 1 << 28

	ImirPortMask      = 0xffff
	ImirPortBP        = 1 << 16
	ImirPriorityShift = 29

	ImirextSizeThreshMask = 0xfff
	ImirextSizeBP         = 1 << 12
	ImirextCtrlShift      = 13 // URG, ACK, PSH, RST, SYN, FIN from bit 13 up
	ImirextCtrlMask       = 0x3f << ImirextCtrlShift
	ImirextCtrlBP         = 1 << 19
)

// filterQueueLocked is the queue the EtherType and 2-tuple filters assign
// f to, or -1; mu is held.
func (n *NIC) filterQueueLocked(f []byte) int {
	if q := n.etqfQueueLocked(f); q >= 0 {
		return q
	}
	return n.ttqfQueueLocked(f)
}

// etherType is the frame's EtherType after a VLAN tag, if any, and where
// its L3 header starts.
func (n *NIC) etherType(f []byte) (uint16, int) {
	et := binary.BigEndian.Uint16(f[12:])
	if et == uint16(n.regs[nicmodel.VET/4]) && len(f) >= ethHdrLen+vlanTagLen {
		return binary.BigEndian.Uint16(f[16:]), ethHdrLen + vlanTagLen
	}
	return et, ethHdrLen
}

// etqfQueueLocked is the queue the EtherType filters assign f to, or -1;
// mu is held.
func (n *NIC) etqfQueueLocked(f []byte) int {
	if len(f) < ethHdrLen {
		return -1
	}
	et, _ := n.etherType(f)
	q := -1
	for i := range uint32(etqfRegs) {
		v := n.regs[ETQF/4+i]
		if v&EtqfFilterEnable == 0 || uint16(v&EtqfETypeMask) != et {
			continue
		}
		if v&EtqfQueueEnable != 0 {
			q = int(v&EtqfQueueMask>>EtqfQueueShift) % Queues
		} else {
			q = -1
		}
	}
	return q
}

// l4 is what the 2-tuple filters look at in a frame.
type l4 struct {
	proto     uint8
	port      uint16 // destination port, wire byte order folded little-endian
	flags     uint8  // TCP flags, URG down to FIN
	ok, isTCP bool
}

// parseL4 finds the IP protocol and TCP or UDP destination port of an
// unfragmented IPv4 or IPv6 frame.
func (n *NIC) parseL4(f []byte) l4 {
	if len(f) < ethHdrLen {
		return l4{}
	}
	et, off := n.etherType(f)
	var p l4
	switch et {
	case 0x0800:
		if len(f) < off+20 || f[off]>>4 != 4 {
			return l4{}
		}
		ihl := int(f[off]&0xf) * 4
		if ihl < 20 || binary.BigEndian.Uint16(f[off+6:])&0x3fff != 0 {
			return l4{}
		}
		p.proto, off = f[off+9], off+ihl
	case 0x86dd:
		if len(f) < off+40 {
			return l4{}
		}
		p.proto, off = f[off+6], off+40
	default:
		return l4{}
	}
	switch p.proto {
	case 6:
		if len(f) < off+14 {
			return l4{}
		}
		p.isTCP, p.flags = true, f[off+13]&0x3f
	case 17:
		if len(f) < off+8 {
			return l4{}
		}
	default:
		p.ok = true // the protocol alone may still match
		return p
	}
	p.port = binary.LittleEndian.Uint16(f[off+2:])
	p.ok = true
	return p
}

// ttqfQueueLocked is the queue the 2-tuple filters assign f to, or -1;
// mu is held.
func (n *NIC) ttqfQueueLocked(f []byte) int {
	var p l4
	parsed := false
	q, best := -1, -1
	for i := range uint32(ttqfRegs) {
		ttqf := n.regs[TTQF/4+i]
		if ttqf&TtqfQueueEnable == 0 {
			continue
		}
		if !parsed {
			p, parsed = n.parseL4(f), true
			if !p.ok {
				return -1
			}
		}
		imir, ext := n.regs[IMIR/4+i], n.regs[IMIREXT/4+i]
		switch {
		case ttqf&TtqfMaskProtocolBP == 0 && uint8(ttqf&TtqfProtocolMask) != p.proto:
			continue
		case imir&ImirPortBP == 0 && (p.proto != 6 && p.proto != 17 || uint16(imir&ImirPortMask) != p.port):
			continue
		case ext&ImirextSizeBP == 0 && len(f) >= int(ext&ImirextSizeThreshMask):
			continue
		case ext&ImirextCtrlBP == 0 && (!p.isTCP || p.flags&tcpFlags(ext) == 0):
			continue
		}
		if prio := int(imir >> ImirPriorityShift); prio > best {
			q, best = int(ttqf&TtqfQueueMask>>TtqfQueueShift)%Queues, prio
		}
	}
	return q
}

// tcpFlags is IMIREXT's control bits as TCP header flags: the register
// lists URG first, the header FIN first.
func tcpFlags(ext uint32) uint8 {
	var m uint8
	for k := range 6 {
		if ext&(1<<(ImirextCtrlShift+k)) != 0 {
			m |= 1 << (5 - k)
		}
	}
	return m
}
