package vtd

import "testing"

func TestIOTLBStaleUntilInvalidated(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	src := sid(0, 2, 0)
	const did = 7
	top := tb.context(src, did, 4)
	leaf := tb.mapAt(top, 4, 0x10_0000, 0xa000, 1, rw)
	enable(t, u, tb.root)
	mustTranslate(t, u, src, 0x10_0000, false, 0xa000)

	// Remap without invalidating: the cached translation stays.
	tb.mem.put64(leaf, 0xb000|rw)
	mustTranslate(t, u, src, 0x10_0000, false, 0xa000)
	// Unmap: the stale entry still translates.
	tb.mem.put64(leaf, 0)
	mustTranslate(t, u, src, 0x10_0010, true, 0xa010)
	// Invalidations of another page or another domain leave it.
	if v := pageInval(u, did, 0x10_1000, 0, false); v>>IOTLB_IAIG_SHIFT&3 != IOTLB_PAGE {
		t.Fatalf("page invalidation reported %#x", v)
	}
	mustTranslate(t, u, src, 0x10_0000, false, 0xa000)
	pageInval(u, did+1, 0x10_0000, 0, false)
	u.Write64(IOTLB, IOTLB_IVT|IOTLB_DOMAIN<<IOTLB_IIRG_SHIFT|uint64(did+1)<<IOTLB_DID_SHIFT)
	mustTranslate(t, u, src, 0x10_0000, false, 0xa000)
	// The right page-selective invalidation drops it.
	pageInval(u, did, 0x10_0000, 0, true)
	mustFault(t, u, src, 0x10_0000, false, ReasonRead)

	s := u.Stats()
	if s.IOTLBHits != 4 || s.IOTLBPage != 3 || s.IOTLBDomain != 1 || s.Walks != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestPageInvalidationAddressMask(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	src := sid(0, 4, 0)
	const did = 3
	const n = 12
	top := tb.context(src, did, 4)
	var leaves []uint64
	for i := range uint64(n) {
		leaves = append(leaves, tb.mapAt(top, 4, 0x40_0000+i<<12, 0x100_0000+i<<12, 1, rw))
	}
	big := tb.mapAt(top, 4, 0x80_0000, 0x200_0000, 2, rw)
	enable(t, u, tb.root)
	for i := range uint64(n) {
		mustTranslate(t, u, src, 0x40_0000+i<<12, false, 0x100_0000+i<<12)
	}
	mustTranslate(t, u, src, 0x80_0000, false, 0x200_0000)
	for _, l := range leaves {
		tb.mem.put64(l, 0)
	}
	tb.mem.put64(big, 0)
	// expect checks that exactly the pages in [lo, hi) were dropped.
	dropped := make([]bool, n)
	expect := func(lo, hi uint64) {
		t.Helper()
		for i := range uint64(n) {
			iova := 0x40_0000 + i<<12
			if iova >= lo && iova < hi {
				dropped[i] = true
			}
			if dropped[i] {
				mustFault(t, u, src, iova, false, ReasonRead)
			} else {
				mustTranslate(t, u, src, iova, false, 0x100_0000+i<<12)
			}
		}
	}
	// AM=2 covers 4 pages; the address bits below the mask are ignored,
	// so 0x40_6000 with AM=2 means [0x40_4000, 0x40_8000).
	pageInval(u, did, 0x40_6000, 2, false)
	expect(0x40_4000, 0x40_8000)
	// A 4 KiB invalidation inside a 2 MiB leaf drops the whole leaf.
	mustTranslate(t, u, src, 0x80_0000, false, 0x200_0000)
	pageInval(u, did, 0x9f_f000, 0, false)
	mustFault(t, u, src, 0x80_0000, false, ReasonRead)
	// A mask above CAP.MAMV is rejected: IAIG 0, nothing dropped.
	if v := pageInval(u, did, 0, maxAM+1, false); v>>IOTLB_IAIG_SHIFT&3 != 0 || v&IOTLB_IVT != 0 {
		t.Fatalf("rejected invalidation reported %#x", v)
	}
	expect(0, 0)
	// AM=3 covers eight pages: [0x40_0000, 0x40_8000), not 0x40_8000.
	pageInval(u, did, 0x40_0000, 3, false)
	expect(0x40_0000, 0x40_8000)
	// AM=0 drops exactly one page.
	pageInval(u, did, 0x40_9000, 0, false)
	expect(0x40_9000, 0x40_a000)
	if s := u.Stats(); s.IOTLBRejected != 1 || s.IOTLBPage != 4 {
		t.Errorf("stats %+v", s)
	}
}

func TestPageInvalidationWithoutPSI(t *testing.T) {
	tb := newTables(t)
	cfg := QEMU()
	cfg.PSI = false
	u := newUnit(t, cfg, tb)
	a, b := sid(0, 1, 0), sid(0, 2, 0)
	ta, tbl := tb.context(a, 1, 4), tb.context(b, 2, 4)
	la := tb.mapAt(ta, 4, 0x1000, 0x5000, 1, rw)
	lb := tb.mapAt(tbl, 4, 0x1000, 0x6000, 1, rw)
	enable(t, u, tb.root)
	mustTranslate(t, u, a, 0x1000, false, 0x5000)
	mustTranslate(t, u, b, 0x1000, false, 0x6000)
	tb.mem.put64(la, 0)
	tb.mem.put64(lb, 0)
	// Without PSI a page request is carried out for the whole domain.
	if v := pageInval(u, 1, 0x8000, 0, false); v>>IOTLB_IAIG_SHIFT&3 != IOTLB_DOMAIN {
		t.Fatalf("IAIG %d, want domain", v>>IOTLB_IAIG_SHIFT&3)
	}
	mustFault(t, u, a, 0x1000, false, ReasonRead)
	mustTranslate(t, u, b, 0x1000, false, 0x6000)
}

func TestIOTLBHalfRegisterWrites(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	src := sid(0, 1, 0)
	leaf := tb.mapAt(tb.context(src, 9, 4), 4, 0x2000, 0x7000, 1, rw)
	enable(t, u, tb.root)
	mustTranslate(t, u, src, 0x2000, false, 0x7000)
	tb.mem.put64(leaf, 0x8000|rw)
	cmd := uint64(IOTLB_IVT | IOTLB_DOMAIN<<IOTLB_IIRG_SHIFT | 9<<IOTLB_DID_SHIFT)
	u.Write32(IOTLB, uint32(cmd))
	mustTranslate(t, u, src, 0x2000, false, 0x7000) // lower half alone does nothing
	u.Write32(IOTLB+4, uint32(cmd>>32))
	if v := u.Read64(IOTLB); v&IOTLB_IVT != 0 || v>>IOTLB_IAIG_SHIFT&3 != IOTLB_DOMAIN {
		t.Fatalf("IOTLB %#x after a split write", v)
	}
	mustTranslate(t, u, src, 0x2000, false, 0x8000)
}

func TestCachedPermissionFaults(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	src := sid(0, 1, 0)
	leaf := tb.mapAt(tb.context(src, 1, 4), 4, 0x2000, 0x7000, 1, ro)
	enable(t, u, tb.root)
	mustTranslate(t, u, src, 0x2000, false, 0x7000)
	// Upgrading to read-write needs an invalidation: the cached read-only
	// entry still refuses the write.
	tb.mem.put64(leaf, 0x7000|rw)
	mustFault(t, u, src, 0x2000, true, ReasonWrite)
	pageInval(u, 1, 0x2000, 0, false)
	mustTranslate(t, u, src, 0x2000, true, 0x7000)
}

func TestContextCache(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	// Functions 0..7 of device 3 on bus 0, each in its own domain.
	var tops [8]uint64
	for fn := range uint8(8) {
		tops[fn] = tb.context(sid(0, 3, fn), uint16(10+fn), 4)
		tb.mapAt(tops[fn], 4, 0x1000, 0x10_0000+uint64(fn)<<12, 1, rw)
	}
	enable(t, u, tb.root)
	warm := func() {
		for fn := range uint8(8) {
			u.Translate(sid(0, 3, fn), 0x1000, false)
		}
	}
	warm()
	// Move every function to a new table mapping 0x1000 elsewhere, and
	// flush the IOTLB so only the context cache can keep the old one.
	for fn := range uint8(8) {
		top := tb.page()
		tb.mapAt(top, 4, 0x1000, 0x20_0000+uint64(fn)<<12, 1, rw)
		tb.setContext(sid(0, 3, fn), top|entryPresent, 2|uint64(10+fn)<<ctxDIDShift)
	}
	flushTLB := func() { u.Write64(IOTLB, IOTLB_IVT|IOTLB_GLOBAL<<IOTLB_IIRG_SHIFT) }
	flushTLB()
	check := func(newFns ...uint8) {
		t.Helper()
		for fn := range uint8(8) {
			want := 0x10_0000 + uint64(fn)<<12
			for _, n := range newFns {
				if n == fn {
					want = 0x20_0000 + uint64(fn)<<12
				}
			}
			mustTranslate(t, u, sid(0, 3, fn), 0x1000, false, want)
		}
	}
	check() // all stale
	// Device-selective, FM=0: function 1 only, and only with its DID.
	u.Write64(CCMD, CCMD_ICC|CCMD_DEVICE<<CCMD_CIRG_SHIFT|uint64(sid(0, 3, 1))<<CCMD_SID_SHIFT|12)
	flushTLB()
	check()
	u.Write64(CCMD, CCMD_ICC|CCMD_DEVICE<<CCMD_CIRG_SHIFT|uint64(sid(0, 3, 1))<<CCMD_SID_SHIFT|11)
	if v := u.Read64(CCMD); v&CCMD_ICC != 0 || v>>CCMD_CAIG_SHIFT&3 != CCMD_DEVICE {
		t.Fatalf("CCMD %#x after device invalidation", v)
	}
	flushTLB()
	check(1)
	// Domain-selective for DID 14 (function 4).
	u.Write64(CCMD, CCMD_ICC|CCMD_DOMAIN<<CCMD_CIRG_SHIFT|14)
	flushTLB()
	check(1, 4)
	// FM=2 masks the two high function bits: functions 2, 3, 6, 7 of the
	// same DID... each has its own DID, so only DID 16 (function 6) goes.
	u.Write64(CCMD, CCMD_ICC|CCMD_DEVICE<<CCMD_CIRG_SHIFT|2<<CCMD_FM_SHIFT|uint64(sid(0, 3, 2))<<CCMD_SID_SHIFT|16)
	flushTLB()
	check(1, 4, 6)
	// Invalid granularity: ignored, CAIG 0.
	u.Write64(CCMD, CCMD_ICC)
	if v := u.Read64(CCMD); v&CCMD_ICC != 0 || v>>CCMD_CAIG_SHIFT&3 != 0 {
		t.Fatalf("CCMD %#x after an invalid request", v)
	}
	u.Write64(CCMD, CCMD_ICC|CCMD_GLOBAL<<CCMD_CIRG_SHIFT)
	flushTLB()
	check(0, 1, 2, 3, 4, 5, 6, 7)
	if s := u.Stats(); s.ContextDevice != 3 || s.ContextDomain != 1 || s.ContextGlobal != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestNoCachingSeesTablesAtOnce(t *testing.T) {
	tb := newTables(t)
	cfg := QEMU()
	cfg.IOTLB = false
	u := newUnit(t, cfg, tb)
	src := sid(0, 1, 0)
	leaf := tb.mapAt(tb.context(src, 1, 4), 4, 0x2000, 0x7000, 1, rw)
	enable(t, u, tb.root)
	mustTranslate(t, u, src, 0x2000, false, 0x7000)
	tb.mem.put64(leaf, 0x8000|rw)
	mustTranslate(t, u, src, 0x2000, false, 0x8000)
	if s := u.Stats(); s.Walks != 2 || s.IOTLBHits != 0 || s.CachedEntries != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestQueuedInvalidationBlocksRegisterInvalidation(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	src := sid(0, 1, 0)
	leaf := tb.mapAt(tb.context(src, 1, 4), 4, 0x2000, 0x7000, 1, rw)
	enable(t, u, tb.root)
	mustTranslate(t, u, src, 0x2000, false, 0x7000)
	u.Write32(GCMD, u.Read32(GSTS)&persistent|GCMD_QIE)
	if u.Read32(GSTS)&GSTS_QIES == 0 || u.Read32(GSTS)&GSTS_TES == 0 {
		t.Fatalf("GSTS %#x after QIE", u.Read32(GSTS))
	}
	tb.mem.put64(leaf, 0x8000|rw)
	u.Write64(IOTLB, IOTLB_IVT|IOTLB_GLOBAL<<IOTLB_IIRG_SHIFT)
	mustTranslate(t, u, src, 0x2000, false, 0x7000)
	if u.Stats().IgnoredInvals != 1 {
		t.Errorf("stats %+v", u.Stats())
	}
}

// A unit of major version 6 or later has no register-based invalidation:
// it says its version, and a write to the IOTLB register leaves a cached
// translation in place.
func TestVersion6HasNoRegisterInvalidation(t *testing.T) {
	tb := newTables(t)
	cfg := QEMU()
	cfg.Version = 0x60
	u := newUnit(t, cfg, tb)
	if v := u.Read32(VER); v != 0x60 {
		t.Fatalf("VER %#x, want 0x60", v)
	}
	src := sid(0, 1, 0)
	leaf := tb.mapAt(tb.context(src, 1, 4), 4, 0x2000, 0x7000, 1, rw)
	u.Write64(RTADDR, tb.root)
	u.Write32(GCMD, GCMD_SRTP)
	u.Write32(GCMD, u.Read32(GSTS)&persistent|GCMD_TE)
	mustTranslate(t, u, src, 0x2000, false, 0x7000)
	tb.mem.put64(leaf, 0x8000|rw)
	u.Write64(IOTLB, IOTLB_IVT|IOTLB_GLOBAL<<IOTLB_IIRG_SHIFT)
	mustTranslate(t, u, src, 0x2000, false, 0x7000)
	if s := u.Stats(); s.IgnoredInvals != 1 || s.IOTLBGlobal != 0 {
		t.Errorf("stats %+v: want the register invalidation ignored", s)
	}
}

func TestCachingModeCachesNotPresent(t *testing.T) {
	tb := newTables(t)
	cfg := QEMU()
	cfg.CachingMode = true
	u := newUnit(t, cfg, tb)
	if u.Read64(CAP)&CAP_CM == 0 {
		t.Fatal("CAP.CM clear")
	}
	src := sid(0, 6, 0)
	enable(t, u, tb.root)
	// A not-present context entry is cached (tagged with domain 0).
	mustFault(t, u, src, 0x1000, false, ReasonRootNotPresent)
	top := tb.context(src, 5, 4)
	mustFault(t, u, src, 0x1000, false, ReasonRootNotPresent)
	u.Write64(CCMD, CCMD_ICC|CCMD_DEVICE<<CCMD_CIRG_SHIFT|uint64(src)<<CCMD_SID_SHIFT|0)
	// A not-present leaf is cached for its domain.
	mustFault(t, u, src, 0x1000, true, ReasonWrite)
	tb.mapAt(top, 4, 0x1000, 0x9000, 1, rw)
	mustFault(t, u, src, 0x1000, false, ReasonRead)
	pageInval(u, 5, 0x1000, 0, false)
	mustTranslate(t, u, src, 0x1000, false, 0x9000)
	// A read-only leaf refusing a write is not cached as absent.
	tb.mapAt(top, 4, 0x2000, 0xa000, 1, ro)
	mustFault(t, u, src, 0x2000, true, ReasonWrite)
	mustTranslate(t, u, src, 0x2000, false, 0xa000)

	// Without caching mode none of this is cached.
	tb2 := newTables(t)
	u2 := newUnit(t, QEMU(), tb2)
	enable(t, u2, tb2.root)
	mustFault(t, u2, src, 0x1000, false, ReasonRootNotPresent)
	top2 := tb2.context(src, 5, 4)
	mustFault(t, u2, src, 0x1000, false, ReasonRead)
	tb2.mapAt(top2, 4, 0x1000, 0x9000, 1, rw)
	mustTranslate(t, u2, src, 0x1000, false, 0x9000)
}

// TestPagingStructureCache replaces a page table by a 2 MiB leaf, as a
// driver folding 512 small pages into one large page does. With paging
// caches the cached directory entry keeps pointing at the old table until
// an invalidation with IH clear; without them (QEMU) IH does not matter.
func TestPagingStructureCache(t *testing.T) {
	for _, paging := range []bool{true, false} {
		tb := newTables(t)
		cfg := QEMU()
		cfg.PagingCache = paging
		u := newUnit(t, cfg, tb)
		src := sid(0, 7, 0)
		const did = 2
		top := tb.context(src, did, 4)
		tb.mapAt(top, 4, 0x20_0000, 0x50_0000, 1, rw)
		tb.mapAt(top, 4, 0x20_1000, 0x51_0000, 1, rw)
		enable(t, u, tb.root)
		mustTranslate(t, u, src, 0x20_0000, false, 0x50_0000)
		// A leaf change reuses the cached directory entry.
		tb.mapAt(top, 4, 0x20_2000, 0x52_0000, 1, rw)
		mustTranslate(t, u, src, 0x20_2000, false, 0x52_0000)
		if s := u.Stats(); paging != (s.PagingHits == 1 && s.CachedTables == 3) {
			t.Errorf("paging %v: stats %+v", paging, s)
		}

		// Fold: the directory entry becomes a 2 MiB leaf.
		pde := tb.slot(top, 4, 0x20_0000, 2)
		tb.mem.put64(pde, 0x80_0000|rw|slPS)
		pageInval(u, did, 0x20_0000, 9, true) // IH set: "only leaves changed"
		if paging {
			// The walk still starts at the old page table.
			mustTranslate(t, u, src, 0x20_1000, false, 0x51_0000)
			pageInval(u, did, 0x20_0000, 9, false)
		}
		mustTranslate(t, u, src, 0x20_1000, false, 0x80_1000)
		mustTranslate(t, u, src, 0x3f_f000, false, 0x9f_f000)

		// Domain invalidation drops cached tables too.
		u.Write64(IOTLB, IOTLB_IVT|IOTLB_DOMAIN<<IOTLB_IIRG_SHIFT|did<<IOTLB_DID_SHIFT)
		if s := u.Stats(); s.CachedTables != 0 || s.CachedEntries != 0 {
			t.Errorf("paging %v: after domain invalidation %+v", paging, s)
		}
	}
}

// Protected memory regions firmware left enabled block DMA into them,
// translated or not, without a fault record, until PMEN.EPM is cleared;
// their bounds cannot move while enabled.
func TestProtectedMemoryRegions(t *testing.T) {
	tb := newTables(t)
	cfg := QEMU()
	cfg.PMR = true
	u := newUnit(t, cfg, tb)
	if u.Read64(CAP)&(CAP_PLMR|CAP_PHMR) != CAP_PLMR|CAP_PHMR {
		t.Fatalf("CAP %#x lacks PLMR and PHMR", u.Read64(CAP))
	}
	u.Write32(PLMBASE, 0)
	u.Write32(PLMLIM, 0x3fe00000) // [0, 1 GiB)
	u.Write32(PMEN, PMEN_EPM)
	u.Write32(PLMLIM, 0) // locked
	if u.Read32(PMEN) != PMEN_EPM|PMEN_PRS || u.Read32(PLMLIM) != 0x3fe00000 {
		t.Fatalf("PMEN %#x PLMLIMIT %#x", u.Read32(PMEN), u.Read32(PLMLIM))
	}
	src := sid(0, 1, 0)
	if _, err := u.Translate(src, 0x7000, true); err == nil {
		t.Error("untranslated DMA into the protected region passed")
	}
	if _, err := u.Translate(src, 0x4000_0000, true); err != nil {
		t.Errorf("DMA above the region: %v", err)
	}
	tb.mapAt(tb.context(src, 1, 4), 4, 0x9000_0000, 0x7000, 1, rw)
	enable(t, u, tb.root)
	if _, err := u.Translate(src, 0x9000_0000, false); err == nil {
		t.Error("translated DMA into the protected region passed")
	}
	if s := u.Stats(); s.ProtectedBlocked != 2 || s.FaultsRecorded != 0 {
		t.Errorf("stats %+v: want 2 blocked, none recorded", s)
	}
	u.Write32(PMEN, 0)
	mustTranslate(t, u, src, 0x9000_0000, false, 0x7000)
}
