package iommu

import (
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// A reserved region reads and writes at its own addresses, translation
// on, for its device alone; Map hands out other addresses; a second
// claim on the range, or a bad range, is refused.
func TestMapReserved(t *testing.T) {
	r := newRig(t, sim.Config{VTd: vtd.QEMU()}, Options{})
	d := r.domain(devA)
	// Low, where the allocator would hand out a first buffer: IOVA
	// 0x1000 stays free, too small for three pages.
	const base, limit = 0x2000, 0x3fff
	if err := d.MapReserved(base, limit); err != nil {
		t.Fatal(err)
	}
	for _, a := range []uint64{base, base + 0x10, limit &^ 0xfff} {
		r.mustTranslate(devA, a, true, kernel.PhysAddr(a), "reserved region")
	}
	r.mustFault(devA, limit+1, false, "past the region")
	r.mustFault(devB, base, false, "another device")
	for range 3 {
		buf := make([]byte, 3*kernel.PageSize)
		addr, err := d.Map(buf, kernel.Bidirectional)
		if err != nil {
			t.Fatal(err)
		}
		if a := uint64(addr); a+uint64(len(buf)) > base && a <= limit {
			t.Errorf("Map handed out %#x, inside the reserved region", a)
		}
	}
	if err := d.MapReserved(base+0x1000, base+0x2fff); err == nil {
		t.Error("a region overlapping a reserved one was mapped")
	}
	if err := d.MapReserved(0x5000, 0x4fff); err == nil {
		t.Error("a region ending before it starts was mapped")
	}
}
