package vtd

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ether9/ether9/kernel"
)

// flatMem is physical memory [0, len) for hand-built tables.
type flatMem struct{ b []byte }

func (m *flatMem) DeviceRead(p kernel.PhysAddr, b []byte) error {
	if uint64(p)+uint64(len(b)) > uint64(len(m.b)) {
		return fmt.Errorf("flat memory: %#x beyond %#x", p, len(m.b))
	}
	copy(b, m.b[p:])
	return nil
}

func (m *flatMem) put64(p, v uint64) { binary.LittleEndian.PutUint64(m.b[p:], v) }
func (m *flatMem) get64(p uint64) uint64 {
	return binary.LittleEndian.Uint64(m.b[p:])
}

// tables builds legacy-mode root, context and second-level tables by hand,
// from the specification's entry formats, independent of kernel/iommu.
type tables struct {
	t    testing.TB
	mem  *flatMem
	next uint64
	root uint64
}

func newTables(t testing.TB) *tables {
	tb := &tables{t: t, mem: &flatMem{b: make([]byte, 16<<20)}, next: 1 << 20}
	tb.root = tb.page()
	return tb
}

func (tb *tables) page() uint64 {
	p := tb.next
	tb.next += kernel.PageSize
	if tb.next > uint64(len(tb.mem.b)) {
		tb.t.Fatal("test memory exhausted")
	}
	return p
}

// context points source src at a fresh top-level table of the given depth
// and returns it.
func (tb *tables) context(src, did uint16, levels int) uint64 {
	top := tb.page()
	tb.setContext(src, top|entryPresent, uint64(levels-2)|uint64(did)<<ctxDIDShift)
	return top
}

func (tb *tables) setContext(src uint16, lo, hi uint64) {
	re := tb.root + uint64(src>>8)*16
	ct := tb.mem.get64(re) & addrMask
	if ct == 0 {
		ct = tb.page()
		tb.mem.put64(re, ct|entryPresent)
	}
	tb.mem.put64(ct+uint64(src&0xff)*16, lo)
	tb.mem.put64(ct+uint64(src&0xff)*16+8, hi)
}

// slot returns the address of the entry for iova at level, creating the
// tables above it (read/write) as needed.
func (tb *tables) slot(top uint64, levels int, iova uint64, level int) uint64 {
	table := top
	for l := levels; l > level; l-- {
		e := table + (iova>>levelShift(l)&0x1ff)*8
		v := tb.mem.get64(e)
		if v&(slR|slW) == 0 {
			v = tb.page() | slR | slW
			tb.mem.put64(e, v)
		}
		table = v & addrMask
	}
	return table + (iova>>levelShift(level)&0x1ff)*8
}

// mapAt writes a leaf at level (1: 4 KiB, 2: 2 MiB, 3: 1 GiB).
func (tb *tables) mapAt(top uint64, levels int, iova, phys uint64, level int, perm uint64) uint64 {
	e := tb.slot(top, levels, iova, level)
	v := phys | perm
	if level > 1 {
		v |= slPS
	}
	tb.mem.put64(e, v)
	return e
}

const (
	rw = slR | slW
	ro = slR
)

// enable runs the documented enable sequence and checks each step.
func enable(t *testing.T, u *Unit, root uint64) {
	t.Helper()
	u.Write64(RTADDR, root)
	u.Write32(GCMD, u.Read32(GSTS)|GCMD_SRTP)
	if u.Read32(GSTS)&GSTS_RTPS == 0 {
		t.Fatal("GSTS.RTPS not set after SRTP")
	}
	globalFlush(t, u)
	u.Write32(GCMD, u.Read32(GSTS)&persistent|GCMD_TE)
	if u.Read32(GSTS)&GSTS_TES == 0 {
		t.Fatal("GSTS.TES not set after TE")
	}
}

// persistent are the GSTS bits that mirror persistent GCMD bits.
const persistent = GSTS_TES | GSTS_QIES | GSTS_IRES | GSTS_CFIS | GSTS_AFLS

func globalFlush(t *testing.T, u *Unit) {
	t.Helper()
	u.Write64(CCMD, CCMD_ICC|CCMD_GLOBAL<<CCMD_CIRG_SHIFT)
	if v := u.Read64(CCMD); v&CCMD_ICC != 0 || v>>CCMD_CAIG_SHIFT&3 != CCMD_GLOBAL {
		t.Fatalf("CCMD after global invalidation: %#x", v)
	}
	u.Write64(IOTLB, IOTLB_IVT|IOTLB_GLOBAL<<IOTLB_IIRG_SHIFT)
	if v := u.Read64(IOTLB); v&IOTLB_IVT != 0 || v>>IOTLB_IAIG_SHIFT&3 != IOTLB_GLOBAL {
		t.Fatalf("IOTLB after global invalidation: %#x", v)
	}
}

func newUnit(t *testing.T, cfg Config, tb *tables) *Unit {
	t.Helper()
	cfg.InvalidationCost = -1
	u, err := New(cfg, tb.mem)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustTranslate(t *testing.T, u *Unit, src uint16, iova uint64, write bool, want uint64) {
	t.Helper()
	got, err := u.Translate(src, iova, write)
	if err != nil {
		t.Fatalf("translate %#x (write %v): %v", iova, write, err)
	}
	if uint64(got) != want {
		t.Fatalf("translate %#x (write %v) = %#x, want %#x", iova, write, got, want)
	}
}

func mustFault(t *testing.T, u *Unit, src uint16, iova uint64, write bool, want Reason) *Fault {
	t.Helper()
	p, err := u.Translate(src, iova, write)
	f, ok := err.(*Fault)
	if !ok {
		t.Fatalf("translate %#x (write %v) = %#x, %v; want fault %v", iova, write, p, err, want)
	}
	if f.Reason != want {
		t.Fatalf("translate %#x (write %v): fault %v, want %v", iova, write, f.Reason, want)
	}
	return f
}

func sid(bus, dev, fn uint8) uint16 { return uint16(bus)<<8 | uint16(dev)<<3 | uint16(fn) }

func pageInval(u *Unit, did uint16, addr uint64, am uint64, ih bool) uint64 {
	iva := addr | am
	if ih {
		iva |= IVA_IH
	}
	u.Write64(IVA, iva)
	u.Write64(IOTLB, IOTLB_IVT|IOTLB_PAGE<<IOTLB_IIRG_SHIFT|uint64(did)<<IOTLB_DID_SHIFT)
	return u.Read64(IOTLB)
}

func (m *flatMem) DeviceWrite(p kernel.PhysAddr, b []byte) error {
	if uint64(p)+uint64(len(b)) > uint64(len(m.b)) {
		return fmt.Errorf("flat memory: %#x beyond %#x", p, len(m.b))
	}
	copy(m.b[p:], b)
	return nil
}
