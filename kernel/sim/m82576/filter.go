package m82576

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// rarOffset is where receive address register pair n lives.
func rarOffset(n uint32) uint32 {
	if n < 16 {
		return nicmodel.RAL0 + 8*n
	}
	return RAL16 + 8*(n-16)
}

// acceptLocked is the destination address filter (datasheet 7.1.1.1):
// exact matches in the receive address registers, then broadcast (BAM),
// multicast (MPE or the MTA hash) and unicast promiscuous (UPE). For an
// exact match it returns the pools (RAH.POOLSEL) the entry names.
func (n *NIC) acceptLocked(f []byte, rctl uint32) (ok bool, pools uint32) {
	if nicmodel.IsBroadcast(f) {
		return rctl&nicmodel.RctlBAM != 0, 0
	}
	lo := binary.LittleEndian.Uint32(f[0:4])
	hi := uint32(binary.LittleEndian.Uint16(f[4:6]))
	for i := range uint32(numRAR) {
		off := rarOffset(i)
		rah := n.regs[off/4+1]
		if rah&nicmodel.RahAV != 0 && n.regs[off/4] == lo && rah&0xffff == hi {
			return true, rah >> RahPoolSh & rahPoolMsk
		}
	}
	if f[0]&1 != 0 {
		if rctl&nicmodel.RctlMPE != 0 {
			return true, 0
		}
		return nicmodel.TableBit(n.regs[nicmodel.MTA/4:], nicmodel.MTAHash(f, rctl>>nicmodel.RctlMOSh)), 0
	}
	return rctl&nicmodel.RctlUPE != 0, 0
}

// vlanAcceptLocked is the VLAN filter: the tag's VLAN id in the VFTA.
func (n *NIC) vlanAcceptLocked(f []byte) bool {
	return nicmodel.TableBit(n.regs[nicmodel.VFTA/4:], nicmodel.VLANID(f))
}

// etqfLocked matches the EtherType filters. It returns the index of the
// first enabled filter for p's EtherType, and the queue it steers to if
// its queue enable is set.
func (n *NIC) etqfLocked(p *nicmodel.Packet) (idx int, queue uint32, steer, match bool) {
	for i := range numETQF {
		v := n.regs[ETQF0/4+uint32(i)]
		if v&EtqfFilter == 0 || uint16(v) != p.EtherType {
			continue
		}
		return i, v >> EtqfQueueSh & etqfQueueMk, v&EtqfQueueEn != 0, true
	}
	return 0, 0, false, false
}

// fiveTupleLocked matches the 5-tuple queue filters against an IPv4 TCP
// or UDP frame. The 82576's L4 filters compare five fields (FTQF; the
// 82580 and later parts put 2-tuple TTQF filters at the same offsets):
// protocol, IPv4 source and destination address, source and destination
// port, each unless its FTQF mask bit bypasses it. SAQF, DAQF, SPQF and
// IMIR's port field hold their values as they appear on the wire, the
// first byte in the register's low byte; IMIR and IMIREXT add the
// priority, a size bound and TCP flags. Of the matching filters with
// queue enable set, the one with the highest IMIR priority wins, the
// lowest index among equals. The pool check (FTQF.VF_BP) matters only in
// VMDq mode, which steers by pool before these filters, so it is not
// modelled.
func (n *NIC) fiveTupleLocked(p *nicmodel.Packet, frameLen int) (queue uint32, ok bool) {
	if !p.IPv4 || !p.TCP() && !p.UDP() {
		return 0, false
	}
	le := binary.LittleEndian
	src, dst := le.Uint32(p.Src), le.Uint32(p.Dst)
	sport, dport := le.Uint16(p.L4[0:]), le.Uint16(p.L4[2:]) // wire order
	best := -1
	for i := range uint32(numFTQF) {
		ftqf := n.regs[FTQF0/4+i]
		switch {
		case ftqf&FtqfQueueEn == 0,
			ftqf&FtqfMaskProto == 0 && uint8(ftqf&FtqfProtoMask) != p.Proto,
			ftqf&FtqfMaskSrcAddr == 0 && n.regs[SAQF0/4+i] != src,
			ftqf&FtqfMaskDstAddr == 0 && n.regs[DAQF0/4+i] != dst,
			ftqf&FtqfMaskSrcPort == 0 && uint16(n.regs[SPQF0/4+i]&SpqfPortMask) != sport:
			continue
		}
		imir := n.regs[IMIR0/4+i]
		if imir&ImirPortBP == 0 && uint16(imir&ImirPortMask) != dport {
			continue
		}
		ext := n.regs[IMIREXT/4+i]
		if ext&ImirextSizeBP == 0 && uint32(frameLen) >= ext&ImirextSizeMask {
			continue
		}
		if ext&ImirextCtrlBP == 0 {
			ctrl := ext >> ImirextCtrlSh & 0x3f
			if !p.TCP() || uint32(p.L4[13])&ctrl == 0 {
				continue
			}
		}
		if prio := int(imir >> ImirPrioSh); prio > best {
			best, queue = prio, ftqf>>FtqfQueueSh&ftqfQueueMk
		}
	}
	return queue, best >= 0
}
