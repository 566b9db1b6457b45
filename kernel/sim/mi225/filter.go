package mi225

import "encoding/binary"

// EtherType queue filters (I225 datasheet 8.11, ETQF[0..7]). A filter
// with Filter Enable set matches a frame whose EtherType (the one after a
// VLAN tag, if the frame carries one) equals its EType field; with Queue
// Enable set too, the frame goes to the filter's Rx Queue. In the
// receive queue assignment the MAC address filters' queue selection comes
// first, then the EtherType filters, and RSS only for frames neither
// placed. When several filters match, the last one decides.
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

// etqfQueueLocked is the queue the EtherType filters assign f to, or -1;
// mu is held.
func (n *NIC) etqfQueueLocked(f []byte) int {
	if len(f) < ethHdrLen {
		return -1
	}
	et := binary.BigEndian.Uint16(f[12:])
	if et == uint16(n.regs[VET/4]) && len(f) >= ethHdrLen+vlanTagLen {
		et = binary.BigEndian.Uint16(f[16:])
	}
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
