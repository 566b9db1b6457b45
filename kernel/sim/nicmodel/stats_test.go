package nicmodel

import "testing"

func TestStats(t *testing.T) {
	r := make([]uint32, 0x4100/4)
	const crcerrs = 0x04000
	AddStat(r, crcerrs, 5)
	AddStat(r, crcerrs, 1<<40) // sticks at the maximum
	if v := ReadStat(r, crcerrs); v != 0xffffffff {
		t.Errorf("saturated counter read %#x", v)
	}
	if v := ReadStat(r, crcerrs); v != 0 {
		t.Errorf("counter after a read = %d, want cleared", v)
	}

	AddStat64(r, GORCL, 0xffff_fff0)
	AddStat64(r, GORCL, 0x20) // carries into the high half
	if lo := ReadStat(r, GORCL); lo != 0x10 {
		t.Errorf("GORCL = %#x, want 0x10", lo)
	}
	if lo := ReadStat(r, GORCL); lo != 0x10 {
		t.Errorf("GORCL read again = %#x: the low half must not clear", lo)
	}
	if hi := ReadStat(r, GORCH); hi != 1 {
		t.Errorf("GORCH = %d, want 1", hi)
	}
	if r[GORCL/4] != 0 || r[GORCH/4] != 0 {
		t.Errorf("reading the high half left %#x:%#x", r[GORCH/4], r[GORCL/4])
	}
}

func TestWindow(t *testing.T) {
	regs := make([]uint32, 4)
	w := Window(func(off uint32) uint32 { return regs[off/4] }, func(off, v uint32) { regs[off/4] = v })
	w.Write64(0, 0x0102030405060708)
	if regs[0] != 0x05060708 || regs[1] != 0x01020304 {
		t.Fatalf("Write64 stored %#x", regs)
	}
	w.Write32(8, 7)
	if v := w.Read64(4); v != 0x0000000701020304 {
		t.Errorf("Read64 = %#x", v)
	}
	if v := w.Read32(8); v != 7 {
		t.Errorf("Read32 = %d", v)
	}
}

func TestCountRx(t *testing.T) {
	r := make([]uint32, 0x4200/4)
	bcast := make([]byte, 60)
	copy(bcast, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	mcast := make([]byte, 1000)
	mcast[0] = 1
	jumbo := make([]byte, 3000)
	for _, f := range [][]byte{bcast, mcast, jumbo} {
		CountRx(r, f)
	}
	for _, c := range []struct {
		off, want uint32
	}{
		{GPRC, 3}, {GORCL, 60 + 1000 + 3000 + 3*FCSLen}, {BPRC, 1}, {MPRC, 1},
		{PRC64, 1}, {PRC1023, 1}, {PRC1522, 0}, // the jumbo frame is in no bin
	} {
		if got := ReadStat(r, c.off); got != c.want {
			t.Errorf("statistic %#x = %d, want %d", c.off, got, c.want)
		}
	}
}
