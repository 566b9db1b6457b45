package metal

import (
	"encoding/binary"
	"fmt"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/linux"
	"github.com/ether9/ether9/pci"
)

// MapPhys returns the register window of size bytes at physical address
// base (a BAR, the VT-d unit), through the identity map.
func MapPhys(base uint64, size int) (*linux.MMIO, error) {
	mem, err := Window(base, size)
	if err != nil {
		return nil, err
	}
	return linux.WindowOver(fmt.Sprintf("phys %#x", base), mem), nil
}

// MapBAR returns the window of memory BAR bar of f, where enumeration
// found or put it. It does not size the BAR again: that turns the
// function's decoding off and on, and under QEMU each turn rebuilds the
// machine's memory map, 2-3 ms of TCG time, twice per BAR mapped.
func MapBAR(f *pci.Function, bar int) (kernel.Regs, error) {
	if bar < 0 || bar >= len(f.BARs) || !f.BARs[bar].Mappable() {
		return nil, fmt.Errorf("metal: pci %v BAR%d is not a sized memory BAR", f.Addr, bar)
	}
	return MapPhys(f.BARs[bar].Addr, int(f.BARs[bar].Size))
}

// Identity is a pci.Mapper over the identity map, for ECAM.
type Identity struct{}

// Map implements pci.Mapper.
func (Identity) Map(phys uint64, size int) ([]byte, error) { return Window(phys, size) }

// Table returns a copy of the ACPI table with signature sig, found from
// the RSDP through the RSDT or XSDT (ACPI 5.2.5-5.2.8).
func Table(sig string) ([]byte, error) {
	rsdp, err := call("rsdp", callRSDP, 0, 0)
	if err != nil {
		return nil, err
	}
	r, err := Window(uint64(rsdp), 36)
	if err != nil {
		return nil, err
	}
	if string(r[:8]) != "RSD PTR " {
		return nil, fmt.Errorf("metal: no RSDP signature at %#x", rsdp)
	}
	sdt, width, want := uint64(binary.LittleEndian.Uint32(r[16:])), 4, "RSDT"
	if r[15] >= 2 && binary.LittleEndian.Uint64(r[24:]) != 0 {
		sdt, width, want = binary.LittleEndian.Uint64(r[24:]), 8, "XSDT"
	}
	root, err := table(sdt, want)
	if err != nil {
		return nil, err
	}
	for off := acpi.HeaderLen; off+width <= len(root); off += width {
		var a uint64
		if width == 8 {
			a = binary.LittleEndian.Uint64(root[off:])
		} else {
			a = uint64(binary.LittleEndian.Uint32(root[off:]))
		}
		h, err := Window(a, acpi.HeaderLen)
		if err != nil {
			return nil, err
		}
		if string(h[:4]) == sig {
			return table(a, sig)
		}
	}
	return nil, fmt.Errorf("metal: no ACPI %s table", sig)
}

// table copies the table at pa whose header says sig, checking it.
func table(pa uint64, sig string) ([]byte, error) {
	h, err := Window(pa, acpi.HeaderLen)
	if err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(h[4:]))
	if n < acpi.HeaderLen || n > 1<<20 {
		return nil, fmt.Errorf("metal: ACPI %s at %#x: length %d", sig, pa, n)
	}
	w, err := Window(pa, n)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), w...)
	if _, _, err := acpi.ParseHeader(b, sig); err != nil {
		return nil, err
	}
	return b, nil
}

// Config returns PCI configuration access: ECAM from the MCFG table, or
// the legacy ports (ring 0 needs no iopl) when there is none.
func Config() (pci.Config, error) {
	ecam, err := ecamWindows()
	if err != nil {
		return nil, err
	}
	if ecam == nil {
		return pci.NewPorts(pci.CPUPorts{}), nil
	}
	return pci.NewECAM(ecam, Identity{})
}

// ecamWindows are the MCFG table's ECAM windows; none without the table.
func ecamWindows() ([]acpi.MCFGAllocation, error) {
	b, err := Table("MCFG")
	if err != nil {
		return nil, nil
	}
	m, err := acpi.ParseMCFG(b)
	if err != nil {
		return nil, err
	}
	return m.Allocations, nil
}
