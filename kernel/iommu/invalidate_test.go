package iommu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// TestSkippedInvalidationIsStale proves the model is a fair judge: with the
// IOTLB on and the unmap's invalidation skipped, the device still reaches
// the unmapped buffer, and once the IOVA is reused it reaches the old
// buffer instead of the new one.
func TestSkippedInvalidationIsStale(t *testing.T) {
	r := qemuRig(t)
	d := r.domain(devA)
	a := make([]byte, kernel.PageSize)
	addrA, err := d.Map(a, kernel.FromDevice)
	if err != nil {
		t.Fatal(err)
	}
	physA := r.segs(a)[0].Phys
	r.mustTranslate(devA, uint64(addrA), true, physA, "mapped") // now cached

	r.u.inv.skip = true
	if err := d.Unmap(addrA, len(a), kernel.FromDevice); err != nil {
		t.Fatal(err)
	}
	r.mustTranslate(devA, uint64(addrA), true, physA, "unmapped without invalidation: stale IOTLB entry")

	b := make([]byte, kernel.PageSize)
	addrB, err := d.Map(b, kernel.FromDevice)
	if err != nil {
		t.Fatal(err)
	}
	if addrB != addrA {
		t.Fatalf("IOVA %#x not reused (got %#x): the test needs reuse", addrA, addrB)
	}
	physB := r.segs(b)[0].Phys
	if p, err := r.translate(devA, uint64(addrB), true); err != nil || p != physA || p == physB {
		t.Fatalf("reused IOVA translates to %#x, %v; want the stale %#x (new buffer is at %#x)", p, err, physA, physB)
	}
}

// TestStrictNeverStale: in strict mode an unmapped, cached IOVA faults at
// once and a reused IOVA reaches the new buffer, whatever the granularity
// the unit offers.
func TestStrictNeverStale(t *testing.T) {
	for _, c := range []struct {
		name    string
		psi     bool
		wantInv func(Stats) uint64
	}{
		{"page-selective", true, func(s Stats) uint64 { return s.PageInvalidations }},
		{"domain-selective", false, func(s Stats) uint64 { return s.DomainInvalidations }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := vtd.QEMU()
			cfg.PSI = c.psi
			r := newRig(t, sim.Config{VTd: cfg}, Options{})
			d := r.domain(devA)
			other := r.domain(devB)
			keep := make([]byte, 3*kernel.PageSize)
			keepAddr, err := other.Map(keep, kernel.ToDevice)
			if err != nil {
				t.Fatal(err)
			}
			before := c.wantInv(r.u.Stats())
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range 200 {
				buf := make([]byte, 1+rng.IntN(3*kernel.PageSize))
				addr, err := d.Map(buf, kernel.Bidirectional)
				if err != nil {
					t.Fatal(err)
				}
				segs := r.segs(buf)
				r.mustTranslate(devA, uint64(addr), true, segs[0].Phys, "mapped")
				if err := d.Unmap(addr, len(buf), kernel.Bidirectional); err != nil {
					t.Fatal(err)
				}
				r.mustFault(devA, uint64(addr), false, "strict unmap of a cached IOVA")
				if i%50 == 0 {
					// The other device's mapping survives this domain's
					// invalidations.
					r.mustTranslate(devB, uint64(keepAddr), false, r.segs(keep)[0].Phys, "other domain")
				}
			}
			if got := c.wantInv(r.u.Stats()) - before; got != 200 {
				t.Errorf("%d %s invalidations for 200 unmaps, want 200", got, c.name)
			}
		})
	}
}

// TestDeferredNeverStale: in deferred mode an unmapped IOVA may stay cached
// until the batch is flushed, but it is never handed to another buffer
// before then, so every live mapping always reaches its own memory; after
// Flush every unmapped IOVA faults.
func TestDeferredNeverStale(t *testing.T) {
	r := qemuRig(t)
	if err := r.u.SetMode(Deferred, 16); err != nil {
		t.Fatal(err)
	}
	d := r.domain(devA)
	type m struct {
		addr kernel.DMAAddr
		buf  []byte
		phys kernel.PhysAddr
	}
	var live []m
	unmapped := map[kernel.DMAAddr]bool{}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		if len(live) < 8 || rng.IntN(2) == 0 {
			buf := make([]byte, kernel.PageSize)
			addr, err := d.Map(buf, kernel.FromDevice)
			if err != nil {
				t.Fatal(err)
			}
			if unmapped[addr&^(kernel.PageSize-1)] {
				t.Fatalf("op %d: IOVA %#x reused before its invalidation", i, addr)
			}
			x := m{addr, buf, r.segs(buf)[0].Phys}
			r.mustTranslate(devA, uint64(addr), true, x.phys, "fresh mapping")
			live = append(live, x)
		} else {
			k := rng.IntN(len(live))
			x := live[k]
			live = append(live[:k], live[k+1:]...)
			pendingBefore := r.u.Stats().Pending
			if err := d.Unmap(x.addr, kernel.PageSize, kernel.FromDevice); err != nil {
				t.Fatal(err)
			}
			unmapped[x.addr&^(kernel.PageSize-1)] = true
			if pendingBefore+1 == 16 { // this unmap completed the batch
				if p := r.u.Stats().Pending; p != 0 {
					t.Fatalf("batch of 16 complete, %d still pending", p)
				}
				for a := range unmapped {
					r.mustFault(devA, uint64(a), false, "after batch flush")
				}
				clear(unmapped)
			}
		}
		for _, x := range live {
			r.mustTranslate(devA, uint64(x.addr), true, x.phys, "live mapping")
		}
	}
	if err := r.u.Flush(); err != nil {
		t.Fatal(err)
	}
	for a := range unmapped {
		r.mustFault(devA, uint64(a), false, "after Flush")
	}
}

// mapUnmapLoop maps and unmaps one 4 KiB buffer n times.
func mapUnmapLoop(tb testing.TB, d *Domain, n int) {
	buf := make([]byte, kernel.PageSize)
	for range n {
		addr, err := d.Map(buf, kernel.FromDevice)
		if err != nil {
			tb.Fatal(err)
		}
		if err := d.Unmap(addr, len(buf), kernel.FromDevice); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestDeferredInvalidationRatio counts IOTLB invalidations per 1000
// unmaps: deferred mode must issue at least 30 times fewer than strict.
func TestDeferredInvalidationRatio(t *testing.T) {
	count := func(m Mode) uint64 {
		r := qemuRig(t)
		if err := r.u.SetMode(m, 0); err != nil {
			t.Fatal(err)
		}
		d := r.domain(devA)
		before := r.u.Stats().Invalidations()
		mapUnmapLoop(t, d, 1000)
		if err := r.u.Flush(); err != nil {
			t.Fatal(err)
		}
		s := r.u.Stats()
		if s.Unmaps != 1000 || s.MappedPages != 0 || s.IOVAInUse != 0 {
			t.Fatalf("%v: after 1000 map/unmap: %+v", m, s)
		}
		return s.Invalidations() - before
	}
	strict, deferred := count(Strict), count(Deferred)
	t.Logf("invalidations per 1000 unmaps: strict %d, deferred %d", strict, deferred)
	if strict != 1000 {
		t.Errorf("strict: %d invalidations, want one per unmap", strict)
	}
	if deferred == 0 || strict < 30*deferred {
		t.Errorf("deferred issued %d invalidations, strict %d: want at least 30x fewer", deferred, strict)
	}
}

// TestSetModeStrictFlushes: leaving deferred mode completes the batch.
func TestSetModeStrictFlushes(t *testing.T) {
	r := qemuRig(t)
	if err := r.u.SetMode(Deferred, 100); err != nil {
		t.Fatal(err)
	}
	mapUnmapLoop(t, r.domain(devA), 10)
	if p := r.u.Stats().Pending; p != 10 {
		t.Fatalf("%d pending, want 10", p)
	}
	if err := r.u.SetMode(Strict, 0); err != nil {
		t.Fatal(err)
	}
	if s := r.u.Stats(); s.Pending != 0 || s.IOVAInUse != 0 || s.Mode != Strict {
		t.Errorf("after SetMode(Strict): %+v", s)
	}
	if err := r.u.SetMode(Deferred, -1); err == nil {
		t.Error("negative batch accepted")
	}
	if _, err := ParseMode("lazyish"); err == nil {
		t.Error("ParseMode accepted nonsense")
	}
	if m, err := ParseMode("deferred\n"); err != nil || m != Deferred {
		t.Errorf("ParseMode(deferred) = %v, %v", m, err)
	}
}

// TestDisableFlushesDeferred: Disable completes the deferred batch, as its
// doc says: the unit drops the cached translations of the unmapped IOVAs,
// whose buffers are unpinned and IOVAs freed. Without the flush they would
// stay pinned, and cached, until something else flushed.
func TestDisableFlushesDeferred(t *testing.T) {
	r := qemuRig(t)
	if err := r.u.SetMode(Deferred, 100); err != nil {
		t.Fatal(err)
	}
	d := r.domain(devA)
	pinsBefore := r.m.Mem.Stats()
	type gone struct {
		addr kernel.DMAAddr
		phys kernel.PhysAddr
	}
	var unmapped []gone
	for range 10 {
		buf := make([]byte, kernel.PageSize)
		addr, err := d.Map(buf, kernel.FromDevice)
		if err != nil {
			t.Fatal(err)
		}
		g := gone{addr, physOf(r.segs(buf), 0)}
		r.mustTranslate(devA, uint64(addr), true, g.phys, "mapped") // now cached
		if err := d.Unmap(addr, len(buf), kernel.FromDevice); err != nil {
			t.Fatal(err)
		}
		unmapped = append(unmapped, g)
	}
	if p := r.u.Stats().Pending; p != 10 {
		t.Fatalf("%d unmaps pending, want 10", p)
	}
	// The batch is not flushed yet: the unit still serves them.
	for _, g := range unmapped {
		r.mustTranslate(devA, uint64(g.addr), true, g.phys, "deferred unmap before Disable")
	}
	before := r.m.VTd.Stats()
	if err := r.u.Disable(); err != nil {
		t.Fatal(err)
	}
	s, ms := r.u.Stats(), r.m.VTd.Stats()
	if s.Pending != 0 || s.IOVAInUse != 0 {
		t.Errorf("after Disable: %d unmaps pending, %d IOVA bytes in use: the deferred batch was not completed", s.Pending, s.IOVAInUse)
	}
	inv := func(s vtd.Stats) uint64 { return s.IOTLBGlobal + s.IOTLBDomain + s.IOTLBPage }
	if n := inv(ms) - inv(before); n != 1 {
		t.Errorf("Disable issued %d IOTLB invalidations for a batch of 10 unmaps, want 1", n)
	}
	if ms.CachedEntries != 0 {
		t.Errorf("after Disable the unit still caches %d translations of unmapped IOVAs", ms.CachedEntries)
	}
	if pm := r.m.Mem.Stats(); pm.Pins-pinsBefore.Pins != pm.Unpins-pinsBefore.Unpins {
		t.Errorf("after Disable: %d pins, %d unpins: unmapped buffers still pinned",
			pm.Pins-pinsBefore.Pins, pm.Unpins-pinsBefore.Unpins)
	}
	// With translation off nothing can be cached: a deferred-mode unmap
	// is released at once.
	buf := make([]byte, kernel.PageSize)
	addr, err := d.Map(buf, kernel.ToDevice)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Unmap(addr, len(buf), kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
	if s := r.u.Stats(); s.Pending != 0 || s.IOVAInUse != 0 {
		t.Errorf("unmap with translation off: %d pending, %d IOVA bytes in use; want it released at once", s.Pending, s.IOVAInUse)
	}
	if err := r.u.Enable(); err != nil {
		t.Fatal(err)
	}
	for _, g := range unmapped {
		r.mustFault(devA, uint64(g.addr), true, "unmapped before Disable, translation back on")
	}
}

// TestPageSelectiveMask checks the address mask chosen for a range: the
// smallest aligned power-of-two block of pages that covers it.
func TestPageSelectiveMask(t *testing.T) {
	r := qemuRig(t)
	d := r.domain(devA)
	for _, c := range []struct {
		iova, size uint64
		base       uint64
		am         uint64
	}{
		{0x5000, 0x1000, 0x5000, 0},
		{0x5000, 0x2000, 0x4000, 2},
		{0x4000, 0x2000, 0x4000, 1},
		{0x7000, 0x2000, 0x0000, 4},
		{0x200000, 0x200000, 0x200000, 9},
	} {
		if err := r.u.inv.rangeInvalidate(d, c.iova, c.size); err != nil {
			t.Fatal(err)
		}
		iva := r.m.VTd.Read64(r.u.caps.IRO)
		if iva&^0xfff != c.base || iva&0x3f != c.am {
			t.Errorf("range %#x+%#x: IVA %#x, want base %#x am %d", c.iova, c.size, iva, c.base, c.am)
		}
	}
}

// refusingRegs is a unit that answers domain-selective IOTLB invalidation
// requests with IAIG=0, as hardware does for a granularity it refuses.
type refusingRegs struct {
	kernel.Regs
	iotlb  uint32
	domain bool
}

func (r *refusingRegs) Write64(off uint32, v uint64) {
	if off == r.iotlb {
		r.domain = v>>iotlbIIRGShift&3 == uint64(invDomain)
	}
	r.Regs.Write64(off, v)
}

func (r *refusingRegs) Read64(off uint32) uint64 {
	v := r.Regs.Read64(off)
	if off == r.iotlb && r.domain {
		v &^= iotlbGranMask << iotlbIAIGShift
	}
	return v
}

// TestGlobalFallback: without PSI a strict unmap asks for a
// domain-selective invalidation; when the unit refuses it, a global one
// follows, and the unmapped IOVA faults.
func TestGlobalFallback(t *testing.T) {
	cfg := vtd.QEMU()
	cfg.PSI = false
	m := sim.NewMachine(sim.Config{VTd: cfg})
	regs := &refusingRegs{Regs: m.VTdRegs(), iotlb: vtd.IOTLB}
	u, err := New(regs, m.Mem, Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, m: m, u: u}
	d := r.domain(devA)
	buf := make([]byte, kernel.PageSize)
	addr, err := d.Map(buf, kernel.ToDevice)
	if err != nil {
		t.Fatal(err)
	}
	r.mustTranslate(devA, uint64(addr), false, r.segs(buf)[0].Phys, "mapped")
	before := u.Stats()
	if err := d.Unmap(addr, len(buf), kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
	s := u.Stats()
	if s.RefusedInvalidations-before.RefusedInvalidations != 1 || s.GlobalInvalidations-before.GlobalInvalidations != 1 ||
		s.DomainInvalidations != before.DomainInvalidations {
		t.Errorf("refused %d, global %d, domain %d; want 1 refused domain request and 1 global",
			s.RefusedInvalidations-before.RefusedInvalidations, s.GlobalInvalidations-before.GlobalInvalidations,
			s.DomainInvalidations-before.DomainInvalidations)
	}
	r.mustFault(devA, uint64(addr), false, "after the global fallback")
}

// TestReplacedTableInvalidated: on a unit with paging-structure caches, a
// 2 MiB leaf that takes the place of an empty level-1 table must be
// followed by an invalidation of its range before the device uses it, or
// the unit keeps walking from the cached directory entry into the freed
// table. The device caches that entry by a fault on the emptied 4 KiB
// page.
func TestReplacedTableInvalidated(t *testing.T) {
	cfg := vtd.QEMU()
	cfg.PagingCache = true
	r := newRig(t, sim.Config{VTd: cfg}, Options{})
	d := r.domain(devA)
	hole, err := d.ReserveHole(largeSize - kernel.PageSize) // so the next map lands at 2 MiB
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, kernel.PageSize)
	addr, err := d.Map(buf, kernel.FromDevice)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(addr)&^(kernel.PageSize-1) != largeSize {
		t.Fatalf("4 KiB map at %#x, want %#x", addr, largeSize)
	}
	r.mustTranslate(devA, uint64(addr), true, physOf(r.segs(buf), 0), "4 KiB leaf")
	if err := d.Unmap(addr, len(buf), kernel.FromDevice); err != nil {
		t.Fatal(err)
	}
	// The walk to the emptied leaf caches the directory entries above it.
	tablesBefore := r.m.VTd.Stats().CachedTables
	r.mustFault(devA, uint64(addr), false, "after unmap")
	if n := r.m.VTd.Stats().CachedTables; n <= tablesBefore {
		t.Fatalf("the fault's walk cached no directory entry (%d before, %d after): the test is void", tablesBefore, n)
	}
	if err := d.ReleaseHole(hole); err != nil {
		t.Fatal(err)
	}
	c, err := d.AllocCoherent(largeSize)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != largeSize {
		t.Fatalf("2 MiB allocation at %#x, want %#x over the emptied table", c.Addr, largeSize)
	}
	if len(d.pt.replaced) != 0 {
		t.Fatalf("%d replaced tables not freed", len(d.pt.replaced))
	}
	r.dmaThrough(devA, c.Addr, c.Buf, 0, "2 MiB leaf over a replaced table")
	r.dmaThrough(devA, c.Addr, c.Buf, largeSize-kernel.PageSize+8, "2 MiB leaf, last page")
	if err := d.FreeCoherent(c); err != nil {
		t.Fatal(err)
	}
	r.mustFault(devA, uint64(c.Addr), false, "after FreeCoherent")
}

// A unit of major version 6 or later with no queue either (ECAP.QI
// clear) has no way to invalidate, and is refused. (One with a queue
// invalidates through it: TestQueuedInvalidation.)
func TestVersion6NeedsTheQueue(t *testing.T) {
	c := DecodeCaps(0x60, 0x00d2008c222f0606, 0xf00f4a&^(1<<1))
	if err := c.check(); err == nil || !strings.Contains(err.Error(), "no register-based invalidation") {
		t.Errorf("a version 6 unit without a queue: %v", err)
	}
}
