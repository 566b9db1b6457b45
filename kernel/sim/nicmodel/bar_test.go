package nicmodel

import (
	"sync"
	"testing"
)

func TestMSIXTable(t *testing.T) {
	x := NewMSIXTable(3, 0x2000)
	if x.Vectors() != 3 {
		t.Fatalf("%d vectors, want 3", x.Vectors())
	}
	for v := range 3 {
		if got := x.Read(uint32(v*16+12), 4); got != 1 {
			t.Errorf("vector %d control after reset = %#x, want 1 (masked)", v, got)
		}
	}
	x.Write(16, 8, 0x1122334455667788)
	if got := x.Read(16, 8); got != 0x1122334455667788 {
		t.Errorf("64-bit read back %#x", got)
	}
	if lo, hi := x.Read(16, 4), x.Read(20, 4); lo != 0x55667788 || hi != 0x11223344 {
		t.Errorf("halves %#x %#x, want low dword first", lo, hi)
	}
	x.Write(44, 8, 0xdead_0000_0000) // the high half falls off the end
	if got := x.Read(44, 8); got != 0 {
		t.Errorf("last dword = %#x, want 0", got)
	}
	if got := x.Read(48, 4); got != 0 {
		t.Errorf("read past the table = %#x, want 0", got)
	}
}

func TestSplitAccess(t *testing.T) {
	regs := map[uint32]uint32{}
	var mu sync.Mutex
	read := func(off uint32) uint32 { mu.Lock(); defer mu.Unlock(); return regs[off] }
	write := func(off, v uint32) { mu.Lock(); defer mu.Unlock(); regs[off] = v }
	WriteSplit(write, 0x100, 8, 0xaaaa_bbbb_cccc_dddd)
	if regs[0x100] != 0xccccdddd || regs[0x104] != 0xaaaabbbb {
		t.Fatalf("8-byte write: %#x", regs)
	}
	WriteSplit(write, 0x200, 4, 0xffff_ffff_0000_0001)
	if regs[0x200] != 1 || regs[0x204] != 0 {
		t.Fatalf("4-byte write touched %#x", regs)
	}
	if got := ReadSplit(read, 0x100, 8); got != 0xaaaa_bbbb_cccc_dddd {
		t.Errorf("8-byte read %#x", got)
	}
	if got := ReadSplit(read, 0x100, 4); got != 0xcccc_dddd {
		t.Errorf("4-byte read %#x", got)
	}
}

func TestIOWindow(t *testing.T) {
	const size = 0x1000
	regs := make([]uint32, size/4)
	read := func(off uint32) uint32 { return regs[off/4] }
	write := func(off, v uint32) { regs[off/4] = v }
	var w IOWindow
	w.Write(IOAddr, 0x5402, size, write) // not dword aligned: low bits drop, wraps in the file
	if a := w.Read(IOAddr, read); a != 0x400 {
		t.Fatalf("IOADDR = %#x, want 0x400", a)
	}
	w.Write(IOData, 0xfeed, size, write)
	if regs[0x100] != 0xfeed {
		t.Fatalf("IODATA write landed elsewhere")
	}
	if v := w.Read(IOData, read); v != 0xfeed {
		t.Errorf("IODATA read %#x", v)
	}
	if v := w.Read(0x10, read); v != 0 {
		t.Errorf("reserved I/O offset read %#x", v)
	}
}

func TestMSIXTableConcurrent(t *testing.T) {
	x := NewMSIXTable(4, 0x2000)
	var wg sync.WaitGroup
	for v := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				x.Write(uint32(v*16+8), 4, uint64(i))
				x.Read(uint32(((v+1)%4)*16+8), 4)
			}
		}()
	}
	wg.Wait()
	for v := range 4 {
		if got := x.Read(uint32(v*16+8), 4); got != 99 {
			t.Errorf("vector %d data %d, want the last written", v, got)
		}
	}
}

func TestBARsRoute(t *testing.T) {
	regs := make([]uint32, 64)
	b := BARs{
		Regs: 0, IO: 2, MSIX: NoBAR, Size: uint32(4 * len(regs)),
		Read32:  func(off uint32) uint32 { return regs[off/4] },
		Write32: func(off, v uint32) { regs[off/4] = v },
	}
	b.Write(0, 8, 8, 0x11112222_33334444)
	if regs[2] != 0x33334444 || regs[3] != 0x11112222 {
		t.Fatalf("8-byte write: dwords %#x %#x, want low first", regs[2], regs[3])
	}
	if v := b.Read(0, 8, 8); v != 0x11112222_33334444 {
		t.Fatalf("8-byte read %#x", v)
	}
	b.Write(2, IOAddr, 4, 0x10)
	b.Write(2, IOData, 4, 0xabcd)
	if regs[4] != 0xabcd || b.Read(2, IOData, 4) != 0xabcd {
		t.Fatalf("I/O window write reached %#x", regs[4])
	}
	for _, bar := range []int{3, NoBAR, 5} {
		if v := b.Read(bar, 0, 4); v != ^uint64(0) {
			t.Errorf("BAR %d the part lacks reads %#x, want all ones", bar, v)
		}
		b.Write(bar, 0, 4, 0x5a5a)
	}
	if regs[0] != 0 {
		t.Fatalf("a write to a missing BAR reached register 0: %#x", regs[0])
	}

	b.MSIX, b.Table = 3, NewMSIXTable(2, 0x2000)
	b.Write(3, 16, 4, 0xfee00000)
	if v := b.Read(3, 16, 4); v != 0xfee00000 {
		t.Fatalf("MSI-X entry 1 address %#x", v)
	}
	if v := b.Read(3, 12, 4); v != 1 {
		t.Fatalf("MSI-X entry 0 control %#x, want masked", v)
	}
}
