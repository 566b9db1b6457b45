package vtd

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel"
)

// Queued invalidation (VT-d specification 6.5.2): 128-bit descriptors in a
// ring at IQA, fetched from IQH up to IQT when software moves the tail.

// QueueMemory is what the invalidation queue needs: descriptor fetches and
// invalidation-wait status writes. Both are snooped whatever ECAP.C says.
type QueueMemory interface {
	DeviceRead(p kernel.PhysAddr, b []byte) error
	DeviceWrite(p kernel.PhysAddr, b []byte) error
}

// Descriptor types and fields.
const (
	QI_CC     = 0x1 // context-cache invalidate
	QI_IOTLB  = 0x2 // IOTLB invalidate
	QI_DIOTLB = 0x3 // device-TLB invalidate
	QI_IEC    = 0x4 // interrupt entry cache invalidate
	QI_WAIT   = 0x5 // invalidation wait

	QI_GRAN_SHIFT = 4
	QI_DID_SHIFT  = 16
	QI_SID_SHIFT  = 32
	QI_FM_SHIFT   = 48
	QI_WAIT_IF    = 1 << 4 // raise the invalidation completion event
	QI_WAIT_SW    = 1 << 5 // write the status data
	QI_WAIT_FN    = 1 << 6 // fence
	QI_WAIT_DATA  = 32

	QI_IEC_SELECTIVE  = 1 << 4 // granularity: 0 global, 1 index-selective
	QI_IEC_IM_SHIFT   = 27     // index mask: 2^IM entries, 5 bits
	QI_IEC_IIDX_SHIFT = 32     // interrupt index, 16 bits

	IQA_QS_MASK = 7
	ICS_IWC     = 1 << 0
	IECTL_IM    = 1 << 31
	IECTL_IP    = 1 << 30
)

// SetQueueMemory gives the unit the memory its invalidation queue lives
// in. Without it the queue reads through the table memory and cannot write
// wait status.
func (u *Unit) SetQueueMemory(m QueueMemory) {
	u.mu.Lock()
	u.qmem = m
	u.mu.Unlock()
}

func (u *Unit) queueRead(p uint64, b []byte) error {
	if u.qmem != nil {
		return u.qmem.DeviceRead(kernel.PhysAddr(p), b)
	}
	return u.mem.DeviceRead(kernel.PhysAddr(p), b)
}

// runQueue processes descriptors from IQH to IQT. An invalid descriptor or
// a failed fetch stops the queue with FSTS.IQE, IQH left pointing at it.
func (u *Unit) runQueue() {
	if u.gsts&GSTS_QIES == 0 || u.fsts&FSTS_IQE != 0 {
		return
	}
	entries := uint64(1) << (u.iqa&IQA_QS_MASK + 8)
	base := u.iqa & addrMask
	if u.iqt>>4 >= entries || u.iqh>>4 >= entries {
		// A tail beyond the queue (or a queue shrunk under the head).
		u.queueError()
		return
	}
	for u.iqh != u.iqt {
		i := u.iqh >> 4
		var b [16]byte
		if err := u.queueRead(base+i*16, b[:]); err != nil {
			u.queueError()
			return
		}
		lo, hi := binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
		if !u.descriptor(lo, hi) {
			u.queueError()
			return
		}
		u.iqh = (i + 1) % entries << 4
		u.stats.QueuedDescriptors++
	}
}

func (u *Unit) queueError() {
	u.fsts |= FSTS_IQE
	u.stats.QueueErrors++
	u.event()
}

// descriptor carries out one descriptor; false means it is invalid.
func (u *Unit) descriptor(lo, hi uint64) bool {
	g := lo >> QI_GRAN_SHIFT & 3
	did := uint16(lo >> QI_DID_SHIFT)
	switch lo & 0xf {
	case QI_CC:
		return u.contextInval(g, did, uint16(lo>>QI_SID_SHIFT), lo>>QI_FM_SHIFT&3) != 0
	case QI_IOTLB:
		return u.iotlbInval(g, did, hi&addrMask, hi&IVA_AM_MASK, hi&IVA_IH != 0) != 0
	case QI_IEC:
		u.iecInval(lo&QI_IEC_SELECTIVE != 0, uint16(lo>>QI_IEC_IIDX_SHIFT), lo>>QI_IEC_IM_SHIFT&0x1f)
		return true
	case QI_WAIT:
		if lo&QI_WAIT_SW != 0 {
			if u.qmem == nil {
				return false
			}
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(lo>>QI_WAIT_DATA))
			if err := u.qmem.DeviceWrite(kernel.PhysAddr(hi&^3), b[:]); err != nil {
				return false
			}
		}
		if lo&QI_WAIT_IF != 0 {
			u.ics |= ICS_IWC
			if u.iectl&IECTL_IM != 0 {
				u.iectl |= IECTL_IP
			}
		}
		u.stats.QueueWaits++
		return true
	}
	// Device-TLB invalidations need ECAP.DT; other types are reserved.
	return false
}
