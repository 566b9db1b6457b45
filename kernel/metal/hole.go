package metal

import (
	"fmt"
	"slices"

	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/pci"
)

// MemRange is one entry of the loader's memory map: E820 types, 1 usable
// RAM, 2 reserved, 3 ACPI tables, 4 ACPI NVS (ACPI 6.5, 15.1).
type MemRange struct {
	Base, Size uint64
	Type       uint32
	_          uint32 // struct boot_mem in kernel/metal/shim/shim.h, field for field
}

// fixedMMIO is where a PC's fixed devices begin: the I/O APIC at
// 0xfec00000, the HPET, the VT-d units, the local APIC at 0xfee00000
// and the firmware flash below 4 GiB.
const fixedMMIO = 0xfec00000

// PCIHole is the window the metal platform assigns unassigned BARs from
// (pci.Options.Assign): the largest gap below fixedMMIO that no entry of
// the memory map, whatever its type, and no ECAM window covers, from a
// MiB boundary. It is the gap Linux hands PCI when it cannot read the
// host bridge's windows from ACPI (e820__setup_pci_gap); in QEMU's q35
// every address below 4 GiB that is neither RAM nor a fixed device is
// PCI's.
func PCIHole(mem []MemRange, ecam []acpi.MCFGAllocation) (*pci.MemWindow, error) {
	type span struct{ lo, hi uint64 }
	busy := []span{{0, 1 << 20}, {fixedMMIO, 1 << 32}}
	for _, r := range mem {
		busy = append(busy, span{r.Base, r.Base + r.Size})
	}
	for _, w := range ecam {
		busy = append(busy, span{w.Start(), w.Start() + w.Size()})
	}
	slices.SortFunc(busy, func(a, b span) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	var best span
	end := uint64(0)
	for _, b := range busy {
		lo, hi := (end+1<<20-1)&^(1<<20-1), min(b.lo, fixedMMIO)
		if hi > lo && hi-lo > best.hi-best.lo {
			best = span{lo, hi}
		}
		end = max(end, b.hi)
	}
	if best.hi == best.lo {
		return nil, fmt.Errorf("metal: no gap below %#x for PCI in a memory map of %d entries", fixedMMIO, len(mem))
	}
	return &pci.MemWindow{Base: best.lo, End: best.hi}, nil
}
