package m82576

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// rarOffset is where receive address register pair n lives.
func rarOffset(n uint32) uint32 {
	if n < 16 {
		return RAL0 + 8*n
	}
	return RAL16 + 8*(n-16)
}

// acceptLocked is the destination address filter (datasheet 7.1.1.1):
// exact matches in the receive address registers, then broadcast (BAM),
// multicast (MPE or the MTA hash) and unicast promiscuous (UPE). For an
// exact match it returns the pools (RAH.POOLSEL) the entry names.
func (n *NIC) acceptLocked(f []byte, rctl uint32) (ok bool, pools uint32) {
	if nicmodel.IsBroadcast(f) {
		return rctl&RctlBAM != 0, 0
	}
	lo := binary.LittleEndian.Uint32(f[0:4])
	hi := uint32(binary.LittleEndian.Uint16(f[4:6]))
	for i := range uint32(numRAR) {
		off := rarOffset(i)
		rah := n.regs[off/4+1]
		if rah&RahAV != 0 && n.regs[off/4] == lo && rah&0xffff == hi {
			return true, rah >> RahPoolSh & rahPoolMsk
		}
	}
	if f[0]&1 != 0 {
		if rctl&RctlMPE != 0 {
			return true, 0
		}
		h := nicmodel.MTAHash(f, rctl>>RctlMOSh)
		return n.regs[MTA/4+h>>5]&(1<<(h&31)) != 0, 0
	}
	return rctl&RctlUPE != 0, 0
}

func (n *NIC) vlanAcceptLocked(f []byte) bool {
	vid := uint32(binary.BigEndian.Uint16(f[14:]) & 0xfff)
	return n.regs[VFTA/4+vid>>5]&(1<<(vid&31)) != 0
}

// etqfLocked matches the EtherType filters. It returns the index of the
// first enabled filter for p's EtherType, and the queue it steers to if
// its queue enable is set.
func (n *NIC) etqfLocked(p *packet) (idx int, queue uint32, steer, match bool) {
	for i := range numETQF {
		v := n.regs[ETQF0/4+uint32(i)]
		if v&EtqfFilter == 0 || uint16(v) != p.et {
			continue
		}
		return i, v >> EtqfQueueSh & etqfQueueMk, v&EtqfQueueEn != 0, true
	}
	return 0, 0, false, false
}

// twoTupleLocked matches the 2-tuple filters (TTQF with IMIR and IMIREXT):
// L4 protocol, destination port, a size bound and TCP flags, each of which
// can be bypassed. Of the matching filters with queue enable set, the one
// with the highest IMIR priority wins, the lowest index among equals.
func (n *NIC) twoTupleLocked(p *packet, frameLen int) (queue uint32, ok bool) {
	if p.l4 == nil {
		return 0, false
	}
	port, hasPort := p.dstPort()
	best := -1
	for i := range uint32(numTTQF) {
		ttqf := n.regs[TTQF0/4+i]
		if ttqf&TtqfQueueEn == 0 {
			continue
		}
		if ttqf&TtqfMaskProto == 0 && uint8(ttqf&TtqfProtoMask) != p.proto {
			continue
		}
		imir := n.regs[IMIR0/4+i]
		if imir&ImirPortBP == 0 && (!hasPort || uint16(imir&ImirPortMask) != port) {
			continue
		}
		ext := n.regs[IMIREXT/4+i]
		if ext&ImirextSizeBP == 0 && uint32(frameLen) >= ext&ImirextSizeMask {
			continue
		}
		if ext&ImirextCtrlBP == 0 {
			ctrl := ext >> ImirextCtrlSh & 0x3f
			if !p.tcp() || uint32(p.l4[13])&ctrl == 0 {
				continue
			}
		}
		prio := int(imir >> ImirPrioSh)
		if prio > best {
			best, queue = prio, ttqf>>TtqfQueueSh&ttqfQueueMk
		}
	}
	return queue, best >= 0
}
