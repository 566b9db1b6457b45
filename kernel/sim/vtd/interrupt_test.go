package vtd

import (
	"testing"
)

// irte is built here from the entry format of the specification (9.10),
// independent of kernel/iommu.
type entry struct {
	vector   uint8
	dst      uint32 // xAPIC id (bits 47:40), or x2APIC id under EIME
	dm, rh   bool
	tm       bool
	dlm      uint64
	fpd      bool
	absent   bool
	svt, sq  uint64
	sid      uint16
	eime     bool
	extraLo  uint64 // reserved bits to set
	extraHi  uint64
	avail    uint64 // the software-available bits 11:8
	noVector bool
}

func (e entry) words() (lo, hi uint64) {
	if !e.absent {
		lo |= IRTE_P
	}
	for _, b := range []struct {
		on  bool
		bit uint64
	}{{e.fpd, IRTE_FPD}, {e.dm, IRTE_DM}, {e.rh, IRTE_RH}, {e.tm, IRTE_TM}} {
		if b.on {
			lo |= b.bit
		}
	}
	lo |= e.dlm<<IRTE_DLM_SHIFT | e.avail<<8 | uint64(e.vector)<<IRTE_V_SHIFT
	if e.eime {
		lo |= uint64(e.dst) << IRTE_DST_SHIFT
	} else {
		lo |= uint64(e.dst&0xff) << 40
	}
	hi = uint64(e.sid)<<IRTE_SID_SHIFT | e.sq<<IRTE_SQ_SHIFT | e.svt<<IRTE_SVT_SHIFT
	return lo | e.extraLo, hi | e.extraHi
}

// irTable allocates a table of 2^(s+1) entries in test memory.
func (tb *tables) irTable(s uint64) uint64 {
	base := tb.page()
	for range (2<<s)*16/4096 - 1 {
		tb.page() // contiguous: page() hands out pages in order
	}
	return base
}

func (tb *tables) setIRTE(base uint64, index int, e entry) {
	lo, hi := e.words()
	tb.mem.put64(base+uint64(index)*16, lo)
	tb.mem.put64(base+uint64(index)*16+8, hi)
}

// enableIR latches the table at base (size field s, flags such as EIME)
// and turns remapping on, checking each status bit.
func enableIR(t *testing.T, u *Unit, base, s, flags uint64) {
	t.Helper()
	u.Write64(IRTA, base|flags|s)
	u.Write32(GCMD, u.Read32(GSTS)&persistent|GCMD_SIRTP)
	if u.Read32(GSTS)&GSTS_IRTPS == 0 {
		t.Fatal("GSTS.IRTPS not set after SIRTP")
	}
	u.Write32(GCMD, u.Read32(GSTS)&persistent|GCMD_IRE)
	if u.Read32(GSTS)&GSTS_IRES == 0 {
		t.Fatal("GSTS.IRES not set after IRE")
	}
}

// remappable is the address of a remappable-format request for handle.
func remappable(handle uint16, shv bool) uint64 {
	a := uint64(MSI_ADDR_WINDOW|MSI_ADDR_FORMAT) | uint64(handle&0x7fff)<<MSI_ADDR_HANDLE_SHIFT | uint64(handle>>15)<<2
	if shv {
		a |= MSI_ADDR_SHV
	}
	return a
}

func mustRemap(t *testing.T, u *Unit, src uint16, addr uint64, data uint32, wantAddr uint64, wantData uint32) {
	t.Helper()
	a, d, ok := u.Interrupt(src, addr, data)
	if !ok {
		t.Fatalf("interrupt %#x/%#x from %#x blocked: %v", addr, data, src, u.FaultLog())
	}
	if a != wantAddr || d != wantData {
		t.Fatalf("interrupt %#x/%#x from %#x = %#x/%#x, want %#x/%#x", addr, data, src, a, d, wantAddr, wantData)
	}
}

func mustBlock(t *testing.T, u *Unit, src uint16, addr uint64, data uint32, want Reason) Fault {
	t.Helper()
	a, d, ok := u.Interrupt(src, addr, data)
	if ok || a != 0 || d != 0 {
		t.Fatalf("interrupt %#x/%#x from %#x = %#x/%#x, %v; want blocked", addr, data, src, a, d, ok)
	}
	log := u.FaultLog()
	if len(log) == 0 {
		t.Fatal("blocked interrupt left no fault in the log")
	}
	f := log[len(log)-1]
	if !f.Interrupt || f.Reason != want || f.Source != src || f.Addr != addr {
		t.Fatalf("fault %+v, want an interrupt fault %v from %#x at %#x", f, want, src, addr)
	}
	return f
}

func TestInterruptRemapped(t *testing.T) {
	src := sid(3, 4, 1)
	for _, c := range []struct {
		name     string
		e        entry
		handle   uint16
		s        uint64
		eime     bool
		reqData  uint32
		wantAddr uint64
		wantData uint32
	}{
		{"fixed edge", entry{vector: 0x52, dst: 3}, 5, 7, false, 0x41,
			0xfee0_3000, 0x52},
		{"lowest priority logical level", entry{vector: 0x99, dst: 0x0f, dm: true, rh: true, tm: true, dlm: 1}, 0, 7, false, 0,
			0xfee0_f00c, 0x8199},
		{"NMI, available bits ignored", entry{vector: 0x02, dst: 0xff, dlm: 4, avail: 0xf}, 255, 7, false, 0xffff_ffff,
			0xfee_ff000, 0x402},
		{"handle bit 15", entry{vector: 0xe0, dst: 1}, 0x8001, 15, false, 0,
			0xfee0_1000, 0xe0},
		{"x2APIC destination", entry{vector: 0x33, dst: 0x1234_5678, eime: true}, 9, 7, true, 0,
			0x12_3456<<40 | 0xfee7_8000, 0x33},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := newTables(t)
			cfg := QEMU()
			cfg.EIM = c.eime
			u := newUnit(t, cfg, tb)
			base := tb.irTable(c.s)
			tb.setIRTE(base, int(c.handle), c.e)
			var flags uint64
			if c.eime {
				flags = IRTA_EIME
			}
			enableIR(t, u, base, c.s, flags)
			// The request's data carries nothing without SHV: vector,
			// destination and modes come from the entry.
			mustRemap(t, u, src, remappable(c.handle, false), c.reqData, c.wantAddr, c.wantData)
			if s := u.Stats(); s.InterruptsRemapped != 1 || s.InterruptsBlocked != 0 || s.Faults != 0 || s.IRTableLoads != 1 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// A unit without ECAP.EIM has no extended mode: IRTA.EIME reads zero,
// and an entry naming a 32-bit destination is one with reserved bits
// set, blocked, rather than delivered to the low byte of its id.
func TestInterruptEIMEWithoutEIM(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	if ecap := u.Read64(ECAP); ecap&ECAP_EIM != 0 {
		t.Fatalf("QEMU's defaults advertise EIM (ECAP %#x)", ecap)
	}
	base := tb.irTable(7)
	tb.setIRTE(base, 9, entry{vector: 0x33, dst: 0x1234_5678, eime: true})
	enableIR(t, u, base, 7, IRTA_EIME)
	if u.Read64(IRTA)&IRTA_EIME != 0 {
		t.Errorf("IRTA %#x kept EIME on a unit without EIM", u.Read64(IRTA))
	}
	mustBlock(t, u, sid(3, 4, 1), remappable(9, false), 0, ReasonIRReserved)
}

func TestInterruptSubhandle(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	base := tb.irTable(7)
	for i := range 8 {
		tb.setIRTE(base, 16+i, entry{vector: uint8(0x40 + i)})
	}
	enableIR(t, u, base, 7, 0)
	src := sid(0, 3, 0)
	// One handle, eight subhandles: the entries of a multi-vector MSI.
	for i := range uint32(8) {
		mustRemap(t, u, src, remappable(16, true), i, 0xfee0_0000, 0x40+i)
	}
	// Without SHV the data is ignored: always the handle's entry.
	mustRemap(t, u, src, remappable(16, false), 5, 0xfee0_0000, 0x40)
	// Handle 20 plus subhandle 3 is entry 23.
	mustRemap(t, u, src, remappable(20, true), 3, 0xfee0_0000, 0x47)
}

func TestInterruptFaults(t *testing.T) {
	src := sid(2, 1, 0)
	present := entry{vector: 0x40}
	for _, c := range []struct {
		name   string
		e      entry  // at index 4
		s      uint64 // table size field
		flags  uint64 // IRTA flags
		base   uint64 // table base; 0: a fresh table
		noSIRT bool   // remapping on without ever setting the pointer
		addr   uint64
		data   uint32
		reason Reason
		index  uint16
	}{
		{name: "address above 4 GiB", e: present, addr: remappable(4, false) | 1<<32, reason: ReasonIRRequestReserved, index: 4},
		{name: "address outside the window", e: present, addr: remappable(4, false) ^ 1<<28, reason: ReasonIRRequestReserved, index: 4},
		{name: "SHV data 31:16", e: present, addr: remappable(4, true), data: 1 << 16, reason: ReasonIRRequestReserved, index: 4},
		{name: "index beyond the table", e: present, s: 1, addr: remappable(4, false), reason: ReasonIRIndex, index: 4},
		{name: "handle plus subhandle beyond", e: present, s: 1, addr: remappable(3, true), data: 1, reason: ReasonIRIndex, index: 4},
		{name: "handle bit 15 beyond", e: present, addr: remappable(0x8004, false), reason: ReasonIRIndex, index: 0x8004},
		{name: "not present", e: entry{vector: 0x40, absent: true}, addr: remappable(4, false), reason: ReasonIRNotPresent, index: 4},
		{name: "table unreadable", e: present, base: 0x4000_0000, addr: remappable(4, false), reason: ReasonIRTableAccess, index: 4},
		{name: "no table pointer", e: present, noSIRT: true, addr: remappable(1, false), reason: ReasonIRTableAccess, index: 1},
		{name: "reserved lo 14:12", e: entry{vector: 0x40, extraLo: 1 << 12}, addr: remappable(4, false), reason: ReasonIRReserved, index: 4},
		{name: "posted (IM)", e: entry{vector: 0x40, extraLo: IRTE_IM}, addr: remappable(4, false), reason: ReasonIRReserved, index: 4},
		{name: "reserved lo 31:24", e: entry{vector: 0x40, extraLo: 1 << 31}, addr: remappable(4, false), reason: ReasonIRReserved, index: 4},
		{name: "xAPIC destination 39:32", e: entry{vector: 0x40, extraLo: 1 << 32}, addr: remappable(4, false), reason: ReasonIRReserved, index: 4},
		{name: "xAPIC destination 63:48", e: entry{vector: 0x40, extraLo: 1 << 63}, addr: remappable(4, false), reason: ReasonIRReserved, index: 4},
		{name: "reserved hi 127:84", e: entry{vector: 0x40, extraHi: 1 << 20}, addr: remappable(4, false), reason: ReasonIRReserved, index: 4},
		{name: "SVT 11b", e: entry{vector: 0x40, svt: 3}, addr: remappable(4, false), reason: ReasonIRReserved, index: 4},
		{name: "wrong source", e: entry{vector: 0x40, svt: SVT_SID, sid: src + 1}, addr: remappable(4, false), reason: ReasonIRSource, index: 4},
		{name: "bus outside the range", e: entry{vector: 0x40, svt: SVT_BUS, sid: 3<<8 | 5}, addr: remappable(4, false), reason: ReasonIRSource, index: 4},
		{name: "compatibility format, CFIS clear", e: present, addr: 0xfee0_0000, data: 0x40, reason: ReasonIRCompat},
		{name: "compatibility format, EIME set", e: present, flags: IRTA_EIME, addr: 0xfee0_0000, data: 0x40, reason: ReasonIRCompat},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := newTables(t)
			cfg := QEMU()
			cfg.EIM = c.flags&IRTA_EIME != 0
			u := newUnit(t, cfg, tb)
			s := c.s
			if s == 0 {
				s = 7
			}
			base := c.base
			if base == 0 {
				base = tb.irTable(s)
				tb.setIRTE(base, 4, c.e)
			}
			if c.flags&IRTA_EIME != 0 {
				// Compatibility format would pass but for EIME.
				u.Write32(GCMD, GCMD_CFI)
			}
			if c.noSIRT {
				u.Write32(GCMD, u.Read32(GSTS)&persistent|GCMD_IRE)
			} else {
				enableIR(t, u, base, s, c.flags)
			}
			f := mustBlock(t, u, src, c.addr, c.data, c.reason)
			if !f.Recorded || f.Index != c.index {
				t.Errorf("fault %+v: want recorded, index %#x", f, c.index)
			}
			lo, hi := u.Read64(FRCD), u.Read64(FRCD+8)
			if want := uint64(c.index) << 48; lo != want {
				t.Errorf("record lower %#x, want the index in 63:48: %#x", lo, want)
			}
			if want := FRCD_F | uint64(c.reason)<<32 | uint64(src); hi != want {
				t.Errorf("record upper %#x, want %#x (F, reason %#x, source; T clear)", hi, want, uint8(c.reason))
			}
			if v := u.Read32(FSTS); v&FSTS_PPF == 0 || v>>FSTS_FRI_SHIFT&0xff != 0 {
				t.Errorf("FSTS %#x", v)
			}
			if st := u.Stats(); st.InterruptsBlocked != 1 || st.Faults != 1 || st.FaultsRecorded != 1 || st.InterruptsRemapped != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// FPD suppresses the recording of the qualified faults (7.1.3), a
// not-present entry's included, but the request stays blocked.
func TestInterruptFPD(t *testing.T) {
	src := sid(0, 6, 0)
	for _, c := range []struct {
		name   string
		e      entry
		reason Reason
	}{
		{"not present", entry{vector: 0x40, absent: true, fpd: true}, ReasonIRNotPresent},
		{"reserved", entry{vector: 0x40, fpd: true, extraHi: 1 << 40}, ReasonIRReserved},
		{"wrong source", entry{vector: 0x40, fpd: true, svt: SVT_SID, sid: src ^ 0x100}, ReasonIRSource},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := newTables(t)
			u := newUnit(t, QEMU(), tb)
			base := tb.irTable(7)
			tb.setIRTE(base, 1, c.e)
			enableIR(t, u, base, 7, 0)
			f := mustBlock(t, u, src, remappable(1, false), 0, c.reason)
			if f.Recorded || u.Read64(FRCD+8)&FRCD_F != 0 || u.Read32(FSTS) != 0 || u.Read32(FECTL)&FECTL_IP != 0 {
				t.Errorf("suppressed fault recorded: %+v, record %#x, FSTS %#x, FECTL %#x", f, u.Read64(FRCD+8), u.Read32(FSTS), u.Read32(FECTL))
			}
			if st := u.Stats(); st.InterruptsBlocked != 1 || st.FaultsRecorded != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
	// FPD cannot suppress an unqualified fault: the entry is never read.
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	base := tb.irTable(0)
	tb.setIRTE(base, 1, entry{vector: 0x40, fpd: true, absent: true})
	enableIR(t, u, base, 0, 0)
	if f := mustBlock(t, u, src, remappable(2, false), 0, ReasonIRIndex); !f.Recorded {
		t.Errorf("index fault not recorded: %+v", f)
	}
}

func TestInterruptSourceValidation(t *testing.T) {
	dev := sid(5, 3, 4) // 05:03.4
	for _, c := range []struct {
		name    string
		svt, sq uint64
		sid     uint16
		src     uint16
		ok      bool
	}{
		{"none", SVT_NONE, 0, 0xffff, dev, true},
		{"exact", SVT_SID, SQ_ALL, dev, dev, true},
		{"exact, other function", SVT_SID, SQ_ALL, dev, sid(5, 3, 5), false},
		{"exact, other device", SVT_SID, SQ_ALL, dev, sid(5, 4, 4), false},
		{"exact, other bus", SVT_SID, SQ_ALL, dev, sid(6, 3, 4), false},
		{"ignore bit 2", SVT_SID, SQ_IGN2, sid(5, 3, 0), dev, true},
		{"ignore bit 2, bit 1 differs", SVT_SID, SQ_IGN2, sid(5, 3, 2), sid(5, 3, 0), false},
		{"ignore bits 2:1", SVT_SID, SQ_IGN21, sid(5, 3, 1), sid(5, 3, 7), true},
		{"ignore bits 2:1, bit 0 differs", SVT_SID, SQ_IGN21, sid(5, 3, 1), sid(5, 3, 6), false},
		{"ignore the function", SVT_SID, SQ_IGN210, sid(5, 3, 0), sid(5, 3, 7), true},
		{"ignore the function, other device", SVT_SID, SQ_IGN210, sid(5, 3, 0), sid(5, 2, 7), false},
		{"bus range", SVT_BUS, 0, 4<<8 | 6, dev, true},
		{"bus range, first", SVT_BUS, 0, 5<<8 | 6, dev, true},
		{"bus range, last", SVT_BUS, 0, 2<<8 | 5, dev, true},
		{"bus below", SVT_BUS, 0, 6<<8 | 9, dev, false},
		{"bus above", SVT_BUS, 0, 1<<8 | 4, dev, false},
		{"bus range ignores SQ", SVT_BUS, 3, 5<<8 | 5, dev, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := newTables(t)
			u := newUnit(t, QEMU(), tb)
			base := tb.irTable(7)
			tb.setIRTE(base, 0, entry{vector: 0x77, svt: c.svt, sq: c.sq, sid: c.sid})
			enableIR(t, u, base, 7, 0)
			_, d, ok := u.Interrupt(c.src, remappable(0, false), 0)
			if ok != c.ok || ok && d != 0x77 {
				t.Fatalf("source %#x against SID %#x: ok %v data %#x, want ok %v", c.src, c.sid, ok, d, c.ok)
			}
			if !ok {
				mustBlock(t, u, c.src, remappable(0, false), 0, ReasonIRSource)
			}
		})
	}
}

// With remapping off every request passes unchanged; with it on a
// compatibility-format request passes unchanged only under CFIS.
func TestInterruptPassThrough(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	base := tb.irTable(7)
	tb.setIRTE(base, 2, entry{vector: 0x60})
	src := sid(0, 2, 0)
	for _, r := range []struct {
		addr uint64
		data uint32
	}{{0xfee0_1000, 0x4031}, {remappable(2, true), 0x1234}, {remappable(2, false), 0}} {
		mustRemap(t, u, src, r.addr, r.data, r.addr, r.data)
	}
	u.Write64(IRTA, base|7)
	u.Write32(GCMD, GCMD_SIRTP)
	u.Write32(GCMD, GCMD_IRE|GCMD_CFI)
	if u.Read32(GSTS)&(GSTS_IRES|GSTS_CFIS) != GSTS_IRES|GSTS_CFIS {
		t.Fatalf("GSTS %#x", u.Read32(GSTS))
	}
	mustRemap(t, u, src, 0xfee0_1000, 0x4031, 0xfee0_1000, 0x4031)
	mustRemap(t, u, src, remappable(2, false), 0, 0xfee0_0000, 0x60)
	// CFI cleared: compatibility format is blocked.
	u.Write32(GCMD, u.Read32(GSTS)&persistent&^GCMD_CFI)
	if u.Read32(GSTS)&GSTS_CFIS != 0 {
		t.Fatalf("GSTS %#x after clearing CFI", u.Read32(GSTS))
	}
	mustBlock(t, u, src, 0xfee0_1000, 0x4031, ReasonIRCompat)
	// IRE cleared: everything passes again.
	u.Write32(GCMD, u.Read32(GSTS)&persistent&^GCMD_IRE)
	mustRemap(t, u, src, 0xfee0_1000, 0x4031, 0xfee0_1000, 0x4031)
	if s := u.Stats(); s.InterruptsPassed != 5 || s.InterruptsRemapped != 1 || s.InterruptsBlocked != 1 {
		t.Errorf("stats %+v", s)
	}
}

// DMA and interrupt faults share the records: a DMA fault after an
// interrupt fault lands in the next one, formatted as before.
func TestInterruptAndDMAFaultsShareRecords(t *testing.T) {
	tb := newTables(t)
	cfg := QEMU()
	cfg.NFR = 2
	u := newUnit(t, cfg, tb)
	src := sid(0, 2, 0)
	tb.context(src, 1, 4)
	enable(t, u, tb.root)
	base := tb.irTable(7)
	enableIR(t, u, base, 7, 0)
	mustBlock(t, u, src, remappable(9, false), 0, ReasonIRNotPresent)
	mustFault(t, u, src, 0x5123, false, ReasonRead)
	if lo, hi := u.Read64(FRCD), u.Read64(FRCD+8); lo != 9<<48 || hi != FRCD_F|0x22<<32|uint64(src) {
		t.Errorf("interrupt record %#x %#x", lo, hi)
	}
	if lo, hi := u.Read64(FRCD+16), u.Read64(FRCD+24); lo != 0x5000 || hi != FRCD_F|FRCD_T|0x6<<32|uint64(src) {
		t.Errorf("DMA record %#x %#x", lo, hi)
	}
}

func iecIndex(idx uint16, im uint64) [2]uint64 {
	return [2]uint64{QI_IEC | QI_IEC_SELECTIVE | im<<QI_IEC_IM_SHIFT | uint64(idx)<<QI_IEC_IIDX_SHIFT, 0}
}

var iecGlobal = [2]uint64{QI_IEC, 0}

// A cached IRTE is used as hardware uses it until an interrupt entry
// cache invalidation covers its index: a driver that rewrites an entry
// without invalidating keeps getting the old vector.
func TestIECStaleUntilInvalidated(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	q := newQueue(t, u, tb)
	base := tb.irTable(7)
	for i := range 16 {
		tb.setIRTE(base, i, entry{vector: uint8(0x40 + i)})
	}
	enableIR(t, u, base, 7, 0)
	src := sid(0, 2, 0)
	vec := func(i uint16, want uint32) {
		t.Helper()
		mustRemap(t, u, src, remappable(i, false), 0, 0xfee0_0000, want)
	}
	for _, i := range []uint16{3, 4, 5, 9} {
		vec(i, 0x40+uint32(i))
	}
	for _, i := range []int{3, 4, 5} {
		tb.setIRTE(base, i, entry{vector: uint8(0x80 + i)})
	}
	tb.setIRTE(base, 9, entry{absent: true})
	// Stale: the old vectors, and entry 9 though no longer present.
	for _, i := range []uint16{3, 4, 5, 9} {
		vec(i, 0x40+uint32(i))
	}
	q.submit(iecIndex(5, 0))
	vec(5, 0x85)
	vec(4, 0x44)
	// IM 1 covers 8 and 9.
	q.submit(iecIndex(9, 1))
	mustBlock(t, u, src, remappable(9, false), 0, ReasonIRNotPresent)
	vec(4, 0x44)
	// IM 2 from index 1 covers 0 through 3, not 4.
	q.submit(iecIndex(1, 2))
	vec(3, 0x83)
	vec(4, 0x44)
	// A not-present entry was not cached (CAP.CM clear): making it
	// present needs no invalidation.
	tb.setIRTE(base, 9, entry{vector: 0x99})
	vec(9, 0x99)

	// A new table pointer invalidates nothing: the entry cached from the
	// old table is used until a global invalidation.
	next := tb.irTable(7)
	tb.setIRTE(next, 4, entry{vector: 0xc4})
	enableIR(t, u, next, 7, 0)
	vec(4, 0x44)
	q.submit(iecGlobal)
	vec(4, 0xc4)

	s := u.Stats()
	if s.IECGlobal != 1 || s.IECIndex != 3 || s.IRTableLoads != 2 || s.InterruptsBlocked != 1 {
		t.Errorf("stats %+v", s)
	}
	if s.IECHits == 0 || s.CachedIRTEs == 0 {
		t.Errorf("cache unused: %+v", s)
	}
}

// Under caching mode a not-present entry is cached too; without caches
// every request reads the table.
func TestIECCachingModeAndNoCache(t *testing.T) {
	src := sid(0, 2, 0)
	t.Run("caching mode", func(t *testing.T) {
		tb := newTables(t)
		cfg := QEMU()
		cfg.CachingMode = true
		u := newUnit(t, cfg, tb)
		q := newQueue(t, u, tb)
		base := tb.irTable(7)
		enableIR(t, u, base, 7, 0)
		mustBlock(t, u, src, remappable(2, false), 0, ReasonIRNotPresent)
		tb.setIRTE(base, 2, entry{vector: 0x62})
		mustBlock(t, u, src, remappable(2, false), 0, ReasonIRNotPresent)
		q.submit(iecIndex(2, 0))
		mustRemap(t, u, src, remappable(2, false), 0, 0xfee0_0000, 0x62)
	})
	t.Run("no caches", func(t *testing.T) {
		tb := newTables(t)
		u := newUnit(t, Config{}, tb)
		base := tb.irTable(7)
		tb.setIRTE(base, 2, entry{vector: 0x62})
		enableIR(t, u, base, 7, 0)
		mustRemap(t, u, src, remappable(2, false), 0, 0xfee0_0000, 0x62)
		tb.setIRTE(base, 2, entry{vector: 0x72})
		mustRemap(t, u, src, remappable(2, false), 0, 0xfee0_0000, 0x72)
		if s := u.Stats(); s.CachedIRTEs != 0 || s.IECHits != 0 {
			t.Errorf("stats %+v", s)
		}
	})
}
