package iommu

import (
	"encoding/binary"
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// Queued invalidation (VT-d specification 6.5.2). A unit that remaps
// interrupts takes its interrupt-entry-cache invalidations only from the
// queue, and once the queue is on the register-based interface must not
// be used (6.5.2: "software must not use register-based invalidation"),
// so with interrupt remapping every invalidation goes through here.
//
// The queue is one page of 256 128-bit descriptors. Each submission ends
// with an invalidation wait descriptor that writes a sequence number to a
// status word; the submitter polls that word, so exactly one submission is
// in flight and the ring can never fill.

// Invalidation queue registers (10.4.22-10.4.24).
const (
	regIQH = 0x80 // head, 64: bits 18:4 the next descriptor the unit fetches
	regIQT = 0x88 // tail, 64: bits 18:4 the descriptor software writes next
	regIQA = 0x90 // address, 64: bits 63:12 base, bit 11 width, bits 2:0 size

	iqOffsetMask = 0x7fff0 // IQH and IQT bits 18:4

	iqaQS256 = 0 // QS 0: one page, 2^(0+8) 128-bit descriptors

	fstsIQE = 1 << 4 // invalidation queue error: the descriptor at IQH is bad
	fstsITE = 1 << 6 // invalidation time-out (device-TLB only)
)

// Descriptor types and fields (6.5.2.1-6.5.2.8).
const (
	qiContext = 0x1 // context-cache invalidate
	qiIOTLB   = 0x2 // IOTLB invalidate
	qiIEC     = 0x4 // interrupt entry cache invalidate
	qiWait    = 0x5 // invalidation wait

	qiGranShift = 4  // context and IOTLB: 1 global, 2 domain, 3 device or page
	qiDIDShift  = 16 // domain id
	qiIOTLBDW   = 1 << 6
	qiIOTLBDR   = 1 << 7
	qiIECIndex  = 1 << 4 // index-selective, else global
	qiIECIMSh   = 27     // index mask: 2^IM entries from IIDX
	qiIECIIDXSh = 32
	qiWaitSW    = 1 << 5 // write the status data to the status address
	qiWaitFN    = 1 << 6 // fence: later descriptors wait for this one
	qiWaitData  = 32     // status data, bits 63:32

	queueSlots = kernel.PageSize / 16
)

// queue is a unit's invalidation queue. It runs under the unit's lock.
type queue struct {
	u       *Unit
	ring    kernel.Region
	status  kernel.Region // the wait descriptor's status word, at offset 0
	tail    int           // next free slot
	started bool          // QIE set by us
	seq     uint32        // last status value asked for
	broken  error         // set when the unit stopped the queue (IQE)
	done    uint64        // submissions completed, for Stats
}

func newQueue(u *Unit) (*queue, error) {
	ring, err := u.tm.page()
	if err != nil {
		return nil, fmt.Errorf("invalidation queue: %w", err)
	}
	status, err := u.tm.mem.Alloc(64, 64)
	if err != nil {
		_ = u.tm.free(ring)
		return nil, fmt.Errorf("invalidation status word: %w", err)
	}
	return &queue{u: u, ring: ring, status: status}, nil
}

// start points the unit at the ring and turns the queue on: the tail
// goes to 0 first, as the head resets to it when QIE is set (6.5.2).
func (q *queue) start() error {
	u := q.u
	u.regs.Write64(regIQT, 0)
	q.tail = 0
	u.regs.Write64(regIQA, uint64(q.ring.Phys)&addrMask|iqaQS256)
	if err := u.gcmd("queued invalidation enable", gcmdQIE, 0, func(s uint32) bool { return s&gstsQIES != 0 }); err != nil {
		return err
	}
	q.started = true
	return nil
}

// submit writes descs (two quadwords each), then a wait descriptor, moves
// the tail once and polls the status word until the unit has carried out
// all of them.
func (q *queue) submit(what string, descs ...[2]uint64) error {
	if q.broken != nil {
		return fmt.Errorf("iommu: %s: %w", what, q.broken)
	}
	u := q.u
	q.seq++
	statusWord := q.status.Buf[:4]
	binary.LittleEndian.PutUint32(statusWord, 0)
	wait := [2]uint64{qiWait | qiWaitSW | qiWaitFN | uint64(q.seq)<<qiWaitData, uint64(q.status.Phys)}
	for _, d := range append(descs, wait) {
		off := q.tail * 16
		u.tm.put(q.ring.Buf, off+8, d[1])
		u.tm.put(q.ring.Buf, off, d[0])
		q.tail = (q.tail + 1) % queueSlots
	}
	u.regs.Write64(regIQT, uint64(q.tail)<<4)
	err := u.wait(what, func() bool {
		if binary.LittleEndian.Uint32(statusWord) == q.seq {
			return true
		}
		return u.regs.Read32(regFSTS)&fstsIQE != 0
	})
	if fsts := u.regs.Read32(regFSTS); fsts&fstsIQE != 0 {
		head := u.regs.Read64(regIQH) >> 4 & (queueSlots - 1)
		q.broken = fmt.Errorf("invalidation queue stopped on a bad descriptor at slot %d (FSTS %#x)", head, fsts)
		return fmt.Errorf("iommu: %s: %w", what, q.broken)
	}
	if err != nil {
		return err
	}
	q.done++
	return nil
}

// iotlb is the queued form of invalidator.iotlb. The queue reports no
// actual granularity, so the request is taken as done as asked.
func (q *queue) iotlb(k invKind, did uint16, addr uint64, am uint) error {
	lo := uint64(qiIOTLB) | uint64(k)<<qiGranShift
	if k != invGlobal {
		lo |= uint64(did) << qiDIDShift
	}
	if q.u.caps.DRD {
		lo |= qiIOTLBDR
	}
	if q.u.caps.DWD {
		lo |= qiIOTLBDW
	}
	var hi uint64
	if k == invPage {
		hi = addr | uint64(am)
	}
	return q.submit("IOTLB "+k.String()+" invalidation", [2]uint64{lo, hi})
}

// contextGlobal is the queued form of invalidator.contextGlobal.
func (q *queue) contextGlobal() error {
	return q.submit("context-cache invalidation", [2]uint64{qiContext | 1<<qiGranShift, 0})
}

// iec invalidates the interrupt entry cache: the 2^mask entries from
// index, or, with global, all of them.
func (q *queue) iec(global bool, index uint16, mask uint) error {
	lo := uint64(qiIEC)
	if !global {
		lo |= qiIECIndex | uint64(mask)<<qiIECIMSh | uint64(index)<<qiIECIIDXSh
	}
	return q.submit("interrupt entry cache invalidation", [2]uint64{lo, 0})
}
