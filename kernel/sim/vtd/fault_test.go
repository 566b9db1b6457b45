package vtd

import "testing"

func TestFaultRecording(t *testing.T) {
	tb := newTables(t)
	cfg := QEMU()
	cfg.NFR = 2
	u := newUnit(t, cfg, tb)
	src := sid(0, 2, 0)
	top := tb.context(src, 1, 4)
	tb.mapAt(top, 4, 0x1000, 0x10_0000, 1, ro)
	enable(t, u, tb.root)
	var delivered int
	u.SetFaultNotify(func() { delivered++ })

	if u.Read32(FSTS) != 0 {
		t.Fatalf("FSTS %#x before any fault", u.Read32(FSTS))
	}
	mustFault(t, u, src, 0x1234, true, ReasonWrite)
	fsts := u.Read32(FSTS)
	if fsts&FSTS_PPF == 0 || fsts>>FSTS_FRI_SHIFT&0xff != 0 {
		t.Fatalf("FSTS %#x after first fault", fsts)
	}
	lo, hi := u.Read64(FRCD), u.Read64(FRCD+8)
	if lo != 0x1000 {
		t.Errorf("fault info %#x, want the page 0x1000", lo)
	}
	if hi&FRCD_F == 0 || hi&FRCD_T != 0 || Reason(hi>>FRCD_FR_SHIFT) != ReasonWrite || uint16(hi) != src {
		t.Errorf("record upper %#x: want F, write, reason 5, source %#x", hi, src)
	}
	// Masked: the event is pending, nothing delivered.
	if u.Read32(FECTL)&FECTL_IP == 0 || delivered != 0 {
		t.Fatalf("FECTL %#x, delivered %d", u.Read32(FECTL), delivered)
	}
	// Unmasking delivers the pending event.
	u.Write32(FECTL, 0)
	if u.Read32(FECTL)&FECTL_IP != 0 || delivered != 1 {
		t.Fatalf("after unmask: FECTL %#x, delivered %d", u.Read32(FECTL), delivered)
	}

	// Second fault: a read, in record 1; FRI stays at the first pending.
	mustFault(t, u, src, 0x5_6789, false, ReasonRead)
	if hi := u.Read64(FRCD + 16 + 8); hi&FRCD_T == 0 || Reason(hi>>FRCD_FR_SHIFT) != ReasonRead {
		t.Errorf("second record %#x: want a read with reason 6", hi)
	}
	if fri := u.Read32(FSTS) >> FSTS_FRI_SHIFT & 0xff; fri != 0 {
		t.Errorf("FRI %d, want 0 (the first pending record)", fri)
	}
	if delivered != 1 {
		t.Errorf("a second fault while PPF is set raised an event")
	}
	// Third fault: both records full, so it overflows.
	f := mustFault(t, u, src, 0x9000, false, ReasonRead)
	if f.Recorded || u.Read32(FSTS)&FSTS_PFO == 0 || delivered != 2 {
		t.Fatalf("overflow: recorded %v FSTS %#x delivered %d", f.Recorded, u.Read32(FSTS), delivered)
	}
	// While PFO is set nothing more is recorded, even into a freed record.
	u.Write32(FRCD+12, FRCD_F>>32) // clear record 0 through the upper dword
	if u.Read64(FRCD+8)&FRCD_F != 0 {
		t.Fatal("W1C of F through a 32-bit write did not clear it")
	}
	mustFault(t, u, src, 0xa000, false, ReasonRead)
	if u.Read64(FRCD+8)&FRCD_F != 0 {
		t.Fatal("fault recorded while PFO was set")
	}
	// Clear PFO and record 1: PPF drops, and the next fault lands in
	// record 0 (round robin from where recording stopped).
	u.Write32(FSTS, FSTS_PFO|FSTS_PPF)
	u.Write64(FRCD+16+8, FRCD_F)
	if v := u.Read32(FSTS); v != 0 {
		t.Fatalf("FSTS %#x after clearing everything", v)
	}
	mustFault(t, u, src, 0xb000, true, ReasonWrite)
	if u.Read64(FRCD) != 0xb000 || u.Read32(FSTS)>>FSTS_FRI_SHIFT&0xff != 0 {
		t.Errorf("record 0 %#x, FSTS %#x", u.Read64(FRCD), u.Read32(FSTS))
	}
	s := u.Stats()
	if s.Faults != 5 || s.FaultsRecorded != 3 || s.FaultsDropped != 2 || s.FaultInterrupts != 3 {
		t.Errorf("stats %+v", s)
	}
	if log := u.FaultLog(); len(log) != 5 || log[1].Addr != 0x5_6789 || log[1].Write {
		t.Errorf("fault log %+v", log)
	}
	u.ClearFaultLog()
	if len(u.FaultLog()) != 0 {
		t.Error("fault log not cleared")
	}
}

func TestFaultRecordsAreReadOnly(t *testing.T) {
	tb := newTables(t)
	u := newUnit(t, QEMU(), tb)
	enable(t, u, tb.root)
	mustFault(t, u, sid(0, 0, 0), 0x3000, false, ReasonRootNotPresent)
	u.Write64(FRCD, 0xdead_0000)
	u.Write64(FRCD+8, 0x1234) // F not written: nothing changes
	if u.Read64(FRCD) != 0x3000 || u.Read64(FRCD+8)&FRCD_F == 0 {
		t.Errorf("record changed by software: %#x %#x", u.Read64(FRCD), u.Read64(FRCD+8))
	}
	// PPF is read-only: writing it does not clear the pending fault.
	u.Write32(FSTS, FSTS_PPF)
	if u.Read32(FSTS)&FSTS_PPF == 0 {
		t.Error("PPF cleared by a write")
	}
}
