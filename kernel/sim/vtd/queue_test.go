package vtd

import (
	"encoding/binary"
	"testing"
)

// queue is a hand-built invalidation queue of one 4 KiB page (256
// descriptors).
type queue struct {
	t    *testing.T
	u    *Unit
	tb   *tables
	base uint64
	tail uint64
}

func newQueue(t *testing.T, u *Unit, tb *tables) *queue {
	q := &queue{t: t, u: u, tb: tb, base: tb.page()}
	u.SetQueueMemory(tb.mem)
	u.Write64(IQT, 0)
	u.Write64(IQA, q.base) // QS=0: 256 entries
	u.Write32(GCMD, u.Read32(GSTS)&persistent|GCMD_QIE)
	if u.Read32(GSTS)&GSTS_QIES == 0 {
		t.Fatal("GSTS.QIES not set")
	}
	return q
}

// submit writes descriptors at the tail and moves it.
func (q *queue) submit(d ...[2]uint64) {
	for _, x := range d {
		q.tb.mem.put64(q.base+q.tail*16, x[0])
		q.tb.mem.put64(q.base+q.tail*16+8, x[1])
		q.tail = (q.tail + 1) % 256
	}
	q.u.Write64(IQT, q.tail<<4)
}

func TestQueuedInvalidation(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	src := sid(0, 5, 0)
	const did = 4
	top := tb.context(src, did, 4)
	l1 := tb.mapAt(top, 4, 0x1000, 0x11000, 1, rw)
	l2 := tb.mapAt(top, 4, 0x2000, 0x12000, 1, rw)
	enable(t, u, tb.root)
	q := newQueue(t, u, tb)
	mustTranslate(t, u, src, 0x1000, false, 0x11000)
	mustTranslate(t, u, src, 0x2000, false, 0x12000)
	tb.mem.put64(l1, 0)
	tb.mem.put64(l2, 0)

	status := tb.page()
	q.submit(
		[2]uint64{QI_IOTLB | IOTLB_PAGE<<QI_GRAN_SHIFT | did<<QI_DID_SHIFT, 0x1000},
		[2]uint64{QI_WAIT | QI_WAIT_SW | QI_WAIT_IF | 0x5a5a<<QI_WAIT_DATA, status},
	)
	if got := binary.LittleEndian.Uint32(tb.mem.b[status:]); got != 0x5a5a {
		t.Fatalf("wait status %#x", got)
	}
	if u.Read64(IQH) != q.tail<<4 || u.Read32(ICS)&ICS_IWC == 0 {
		t.Fatalf("IQH %#x ICS %#x", u.Read64(IQH), u.Read32(ICS))
	}
	mustFault(t, u, src, 0x1000, false, ReasonRead)
	mustTranslate(t, u, src, 0x2000, false, 0x12000) // not covered: stale

	// An invalid descriptor stops the queue at it.
	q.submit([2]uint64{0xf, 0}, [2]uint64{QI_IOTLB | IOTLB_GLOBAL<<QI_GRAN_SHIFT, 0})
	if u.Read32(FSTS)&FSTS_IQE == 0 || u.Read64(IQH) != (q.tail-2)<<4 {
		t.Fatalf("after a bad descriptor: FSTS %#x IQH %#x", u.Read32(FSTS), u.Read64(IQH))
	}
	mustTranslate(t, u, src, 0x2000, false, 0x12000)
	// Software fixes it and clears IQE: the queue resumes.
	tb.mem.put64(q.base+(q.tail-2)*16, QI_CC|CCMD_GLOBAL<<QI_GRAN_SHIFT)
	u.Write32(FSTS, FSTS_IQE)
	if u.Read64(IQH) != q.tail<<4 || u.Read32(FSTS)&FSTS_IQE != 0 {
		t.Fatalf("after recovery: FSTS %#x IQH %#x", u.Read32(FSTS), u.Read64(IQH))
	}
	mustFault(t, u, src, 0x2000, false, ReasonRead)
	// A tail beyond the queue's 256 entries is an error, not a loop.
	u.Write64(IQT, 300<<4)
	if u.Read32(FSTS)&FSTS_IQE == 0 {
		t.Fatalf("tail beyond the queue: FSTS %#x", u.Read32(FSTS))
	}
	u.Write64(IQT, q.tail<<4)
	u.Write32(FSTS, FSTS_IQE)
	if u.Read32(FSTS)&FSTS_IQE != 0 {
		t.Fatal("queue error stuck after fixing the tail")
	}
	s := u.Stats()
	if s.QueuedDescriptors != 4 || s.QueueWaits != 1 || s.QueueErrors != 2 || s.ContextGlobal != 2 {
		t.Errorf("stats %+v", s)
	}
	// Disabling the queue resets its head.
	u.Write32(GCMD, u.Read32(GSTS)&persistent&^GCMD_QIE)
	if u.Read64(IQH) != 0 || u.Read32(GSTS)&GSTS_QIES != 0 {
		t.Errorf("after disable: IQH %#x GSTS %#x", u.Read64(IQH), u.Read32(GSTS))
	}
}
