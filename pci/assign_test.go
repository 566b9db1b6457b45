package pci

import (
	"errors"
	"testing"
)

// TestAssignBARs: with a window, the memory BARs firmware left at zero
// get addresses inside it, each aligned to its size and written to the
// register (both halves of a 64-bit one), so that reading the function
// again finds them; an assigned BAR, an I/O BAR and a bridge are left
// alone, and a BAR that no longer fits is an error that leaves it zero.
func TestAssignBARs(t *testing.T) {
	bus := newFakeBus()
	nic := Addr{Dev: 1}
	bus.add(nic, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal).
		bar(0, BARMem32, 0x20000, 0, false).
		bar(1, BARMem32, 0x80000, 0, false).
		bar(2, BARIO, 0x20, 0, false).
		bar(3, BARMem32, 0x4000, 0, false))
	fw := Addr{Dev: 2}
	bus.add(fw, newFakeFn(0x8086, 0x10c9, 0x020000, HeaderNormal).
		bar(0, BARMem32, 0x20000, 0xfeb00000, false). // firmware's
		bar(2, BARMem64, 0x100000, 0, true))
	bridge := Addr{Dev: 3}
	bus.add(bridge, newFakeFn(0x8086, 0x244e, 0x060400, HeaderBridge).bar(0, BARMem32, 0x1000, 0, false))
	big := Addr{Dev: 4}
	bus.add(big, newFakeFn(0x8086, 0x1533, 0x020000, HeaderNormal).bar(0, BARMem32, 0x10000000, 0, false))

	w := &MemWindow{Base: 0x40000000, End: 0x40400000}
	fns, err := Enumerate(bus, Options{Assign: w})
	if !errors.Is(err, ErrWindowFull) {
		t.Errorf("enumerate: %v, want the 256 MiB BAR refused with ErrWindowFull", err)
	}
	got := map[Addr][6]BAR{}
	for _, f := range fns {
		got[f.Addr] = f.BARs
	}
	var taken [][2]uint64
	check := func(a Addr, i int) {
		t.Helper()
		b := got[a][i]
		if !b.Assigned || b.Addr < w.Base || b.Addr+b.Size > w.End || b.Addr&(b.Size-1) != 0 {
			t.Errorf("%v bar%d: %v, want assigned in [%#x, %#x) aligned to its size", a, i, b, w.Base, w.End)
		}
		for _, r := range taken {
			if b.Addr < r[1] && r[0] < b.Addr+b.Size {
				t.Errorf("%v bar%d at %#x+%#x overlaps [%#x, %#x)", a, i, b.Addr, b.Size, r[0], r[1])
			}
		}
		taken = append(taken, [2]uint64{b.Addr, b.Addr + b.Size})
	}
	check(nic, 0)
	check(nic, 1)
	check(nic, 3)
	check(fw, 2)
	if b := got[nic][2]; b.Kind != BARIO || b.Addr != 0 || b.Assigned {
		t.Errorf("the I/O BAR was touched: %v", b)
	}
	if b := got[fw][0]; b.Addr != 0xfeb00000 || b.Assigned {
		t.Errorf("firmware's BAR was moved: %v", b)
	}
	if b := got[bridge][0]; b.Addr != 0 || b.Assigned {
		t.Errorf("the bridge's BAR was assigned: %v", b)
	}
	if b := got[big][0]; b.Addr != 0 || b.Assigned {
		t.Errorf("the BAR that did not fit: %v", b)
	}
	// What was written is what the registers now decode.
	again, _ := Enumerate(bus, Options{})
	for _, f := range again {
		for i, b := range f.BARs {
			if want := got[f.Addr][i]; b.Addr != want.Addr || b.Size != want.Size {
				t.Errorf("%v bar%d reads back %v, assigned %v", f.Addr, i, b, want)
			}
		}
	}
}
