package metal

import (
	"testing"

	"github.com/ether9/ether9/kernel/acpi"
)

// TestPCIHole: the largest gap below the fixed devices at 0xfec00000
// that neither the memory map nor an ECAM window covers, from a MiB
// boundary; for QEMU's q35 with 1 GiB, from the end of RAM to ECAM.
func TestPCIHole(t *testing.T) {
	q35 := []MemRange{
		{Base: 0, Size: 0x9fc00, Type: 1},
		{Base: 0x9fc00, Size: 0x400, Type: 2},
		{Base: 0xf0000, Size: 0x10000, Type: 2},
		{Base: 0x100000, Size: 0x3fedf000, Type: 1},
		{Base: 0x3ffdf000, Size: 0x21000, Type: 2},
		{Base: 0xb0000000, Size: 0x10000000, Type: 2},
		{Base: 0xfed1c000, Size: 0x4000, Type: 2},
		{Base: 0xfffc0000, Size: 0x40000, Type: 2},
		{Base: 0x100000000, Size: 0x40000000, Type: 1}, // RAM above 4 GiB
	}
	ecam := []acpi.MCFGAllocation{{Base: 0xb0000000, EndBus: 255}}
	for _, c := range []struct {
		name      string
		mem       []MemRange
		ecam      []acpi.MCFGAllocation
		base, end uint64
	}{
		{"q35 1 GiB", q35, ecam, 0x40000000, 0xb0000000},
		{"ecam only in MCFG", q35[:5], ecam, 0x40000000, 0xb0000000},
		{"3 GiB of RAM", []MemRange{{Base: 0x100000, Size: 0xbfeff000, Type: 1}, {Base: 0xfeffc000, Size: 0x4000, Type: 2}}, nil, 0xc0000000, 0xfec00000},
		{"unaligned end of RAM", []MemRange{{Base: 0x100000, Size: 0x3ff80000, Type: 1}}, nil, 0x40100000, 0xfec00000},
	} {
		w, err := PCIHole(c.mem, c.ecam)
		if err != nil || w.Base != c.base || w.End != c.end {
			t.Errorf("%s: %+v, %v; want [%#x, %#x)", c.name, w, err, c.base, c.end)
		}
	}
	if w, err := PCIHole([]MemRange{{Base: 0, Size: 1 << 32, Type: 1}}, nil); err == nil {
		t.Errorf("RAM everywhere below 4 GiB: %+v, want an error", w)
	}
}
