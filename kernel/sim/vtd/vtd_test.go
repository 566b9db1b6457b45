package vtd

import (
	"testing"
)

func TestCapsMatchQEMU(t *testing.T) {
	c, e, err := QEMU().Caps()
	if err != nil {
		t.Fatal(err)
	}
	if c != 0x00d2008c222f0606 || e != 0xf00f4a {
		t.Errorf("QEMU caps: CAP %#x ECAP %#x, want 0xd2008c222f0606 0xf00f4a", c, e)
	}
	cfg := QEMU()
	cfg.AddrWidth = 39
	c, _, _ = cfg.Caps()
	if sagaw, mgaw := c>>CAP_SAGAW_SHIFT&0x1f, c>>CAP_MGAW_SHIFT&0x3f; sagaw != SAGAW_39 || mgaw != 38 {
		t.Errorf("39-bit: SAGAW %#x MGAW %d", sagaw, mgaw)
	}
	cfg = Config{Coherent: true, NFR: 8}
	c, e, _ = cfg.Caps()
	if e&ECAP_C == 0 || c&CAP_PSI != 0 || c>>CAP_SLLPS_SHIFT&0xf != 0 || c>>CAP_NFR_SHIFT&0xff != 7 {
		t.Errorf("coherent, 8 records: CAP %#x ECAP %#x", c, e)
	}
	if fro := (c >> CAP_FRO_SHIFT & 0x3ff) * 16; fro != FRCD {
		t.Errorf("FRO %#x, want %#x", fro, FRCD)
	}
	if iro := (e >> ECAP_IRO_SHIFT & 0x3ff) * 16; iro != IVA {
		t.Errorf("IRO %#x, want %#x", iro, IVA)
	}
	for _, bad := range []Config{{AddrWidth: 40}, {NFR: 300}, {NFR: -1}, {SLLPS: 4}} {
		if _, _, err := bad.Caps(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
		if _, err := New(bad, &flatMem{}); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
	if _, err := New(QEMU(), nil); err == nil {
		t.Error("New without memory accepted")
	}
}

func TestRegisterBasics(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	if v := u.Read32(VER); v != 0x10 {
		t.Errorf("VER %#x", v)
	}
	if v := u.Read32(CAP + 4); v != 0x00d2008c {
		t.Errorf("CAP upper half %#x", v)
	}
	if u.Read32(FECTL)&FECTL_IM == 0 {
		t.Error("fault events not masked at reset")
	}
	// Translation off: requests pass through untranslated.
	mustTranslate(t, u, sid(0, 2, 0), 0x1234_5678, true, 0x1234_5678)
	enable(t, u, tb.root)
	if v := u.Read32(GCMD); v != 0 {
		t.Errorf("GCMD reads %#x; it is write-only", v)
	}
	// Disabling translation keeps the root pointer status.
	u.Write32(GCMD, u.Read32(GSTS)&persistent&^GCMD_TE)
	if g := u.Read32(GSTS); g&GSTS_TES != 0 || g&GSTS_RTPS == 0 {
		t.Errorf("GSTS after TE off: %#x", g)
	}
	if s := u.Stats(); s.RootPointerLoads != 1 || s.ContextGlobal != 1 || s.IOTLBGlobal != 1 || s.Untranslated != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestTranslateLevelsAndLargePages(t *testing.T) {
	for _, levels := range []int{3, 4} {
		tb := newTables(t)
		u := newUnit(t, QEMU(), tb)
		src := sid(3, 0x1f, 7)
		top := tb.context(src, 5, levels)
		tb.mapAt(top, levels, 0x7000, 0x3_4000, 1, rw)
		tb.mapAt(top, levels, 0x4000_0000+0x20_0000, 0x1e0_0000, 2, ro)
		tb.mapAt(top, levels, 0x40_0000_0000, 0x1_c000_0000, 3, rw)
		high := uint64(1)<<levelShift(levels+1) - 0x1000 // the last page of the space
		tb.mapAt(top, levels, high, 0x9_9000, 1, rw)
		enable(t, u, tb.root)

		mustTranslate(t, u, src, 0x7abc, false, 0x3_4abc)
		mustTranslate(t, u, src, 0x7abc, true, 0x3_4abc)
		mustTranslate(t, u, src, 0x4000_0000+0x20_0000+0x1_2345, false, 0x1e0_0000+0x1_2345)
		mustTranslate(t, u, src, 0x40_0000_0000+0x3456_789a, true, 0x1_c000_0000+0x3456_789a)
		mustTranslate(t, u, src, high+0x10, true, 0x9_9010)
		mustFault(t, u, src, 0x4000_0000+0x20_0000, true, ReasonWrite) // read-only 2 MiB page
		mustFault(t, u, src, 0x8000, false, ReasonRead)                // not mapped
		mustFault(t, u, src, 1<<levelShift(levels+1), false, ReasonBeyondWidth)
	}
}

func TestLargePageNeedsSLLPS(t *testing.T) {
	tb := newTables(t)
	cfg := QEMU()
	cfg.SLLPS = SLLPS_2M
	u := newUnit(t, cfg, tb)
	src := sid(0, 1, 0)
	top := tb.context(src, 1, 4)
	tb.mapAt(top, 4, 0x20_0000, 0x40_0000, 2, rw)
	tb.mapAt(top, 4, 0x4000_0000, 0x8000_0000, 3, rw)
	tb.mapAt(top, 4, 0x60_0000, 0x41_0000, 2, rw) // 2 MiB leaf not 2 MiB aligned
	enable(t, u, tb.root)
	mustTranslate(t, u, src, 0x3f_ffff, true, 0x5f_ffff)
	mustFault(t, u, src, 0x4000_1000, false, ReasonPageReserved)
	mustFault(t, u, src, 0x60_0000, false, ReasonPageReserved)
}

func TestPermissionsAreAndedAcrossLevels(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	src := sid(0, 3, 0)
	top := tb.context(src, 1, 4)
	tb.mapAt(top, 4, 0x1000, 0x5000, 1, rw)
	// Make the page directory entry above it read-only.
	pde := tb.slot(top, 4, 0x1000, 2)
	tb.mem.put64(pde, tb.mem.get64(pde)&^slW)
	enable(t, u, tb.root)
	mustTranslate(t, u, src, 0x1000, false, 0x5000)
	mustFault(t, u, src, 0x1000, true, ReasonWrite)
}

func TestContextFaults(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, Config{AddrWidth: 39, NFR: 16}, tb)
	enable(t, u, tb.root)
	mustFault(t, u, sid(9, 0, 0), 0x1000, false, ReasonRootNotPresent)
	tb.context(sid(1, 0, 0), 1, 3)
	mustFault(t, u, sid(1, 0, 1), 0x1000, false, ReasonContextNotPresent)
	// AW 2 (4-level) is not in a 39-bit unit's SAGAW.
	tb.setContext(sid(1, 1, 0), tb.page()|entryPresent, 2|1<<ctxDIDShift)
	mustFault(t, u, sid(1, 1, 0), 0x1000, false, ReasonContextInvalid)
	// TT=3 is reserved; TT=1 needs a device-TLB the unit lacks.
	tb.setContext(sid(1, 2, 0), tb.page()|3<<ctxTTShift|entryPresent, 1|1<<ctxDIDShift)
	mustFault(t, u, sid(1, 2, 0), 0x1000, false, ReasonContextInvalid)
	tb.setContext(sid(1, 3, 0), tb.page()|1<<ctxTTShift|entryPresent, 1|1<<ctxDIDShift)
	mustFault(t, u, sid(1, 3, 0), 0x1000, false, ReasonContextInvalid)
	// Reserved bits.
	tb.setContext(sid(1, 4, 0), tb.page()|1<<5|entryPresent, 1|1<<ctxDIDShift)
	mustFault(t, u, sid(1, 4, 0), 0x1000, false, ReasonContextReserved)
	tb.mem.put64(tb.root+2*16, tb.page()|1<<3|entryPresent)
	mustFault(t, u, sid(2, 0, 0), 0x1000, false, ReasonRootReserved)
	// A context pointing its tables outside memory.
	tb.setContext(sid(1, 5, 0), 0x40_0000_0000|entryPresent, 1|1<<ctxDIDShift)
	mustFault(t, u, sid(1, 5, 0), 0x1000, false, ReasonPageTableAccess)
	// Pass-through: identity within the address width.
	tb.setContext(sid(1, 6, 0), ctxTTPass<<ctxTTShift|entryPresent, 1|7<<ctxDIDShift)
	mustTranslate(t, u, sid(1, 6, 0), 0x12_3456_7000, true, 0x12_3456_7000)
	mustFault(t, u, sid(1, 6, 0), 1<<39, true, ReasonBeyondWidth)
	// Fault processing disabled: a fault returns but is not recorded.
	u.Write64(FRCD+8, FRCD_F) // not pending: ignored
	before := u.Stats().FaultsRecorded
	tb.setContext(sid(1, 7, 0), tb.page()|ctxFPD|entryPresent, 1|1<<ctxDIDShift)
	if f := mustFault(t, u, sid(1, 7, 0), 0x1000, true, ReasonWrite); f.Recorded {
		t.Error("fault recorded with FPD set")
	}
	if got := u.Stats().FaultsRecorded; got != before {
		t.Errorf("recorded %d faults with FPD set", got-before)
	}
	// A root table outside memory.
	u.Write64(RTADDR, 0x40_0000_0000)
	u.Write32(GCMD, u.Read32(GSTS)&persistent|GCMD_SRTP)
	globalFlush(t, u)
	mustFault(t, u, sid(1, 0, 0), 0x1000, false, ReasonRootTableAccess)
}
