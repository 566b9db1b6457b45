package pci

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ether9/ether9/kernel/acpi"
)

// Mapper maps size bytes of physical memory at phys as uncached MMIO. The
// Linux-hosted platform maps /dev/mem (DevMem); tests hand out byte slices.
type Mapper interface {
	Map(phys uint64, size int) ([]byte, error)
}

// ECAM reaches configuration space through the PCI Express enhanced
// configuration access mechanism: each function's 4 KiB at
// base + bus<<20 | dev<<15 | fn<<12, in the windows the ACPI MCFG table
// lists. A bus's 1 MiB is mapped on its first access.
type ECAM struct {
	windows []acpi.MCFGAllocation
	mapper  Mapper

	mu    sync.Mutex
	buses map[busKey][]byte
}

type busKey struct {
	seg uint16
	bus uint8
}

// NewECAM returns a Config over the MCFG windows.
func NewECAM(windows []acpi.MCFGAllocation, m Mapper) (*ECAM, error) {
	if len(windows) == 0 {
		return nil, fmt.Errorf("pci ecam: no MCFG windows")
	}
	if m == nil {
		return nil, fmt.Errorf("pci ecam: no mapper")
	}
	return &ECAM{windows: windows, mapper: m, buses: make(map[busKey][]byte)}, nil
}

// bus returns the mapping of one bus's configuration space.
func (e *ECAM) bus(a Addr) ([]byte, error) {
	k := busKey{a.Seg, a.Bus}
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.buses[k]; ok {
		return b, nil
	}
	var w *acpi.MCFGAllocation
	for i := range e.windows {
		if e.windows[i].Covers(a.Seg, a.Bus) {
			w = &e.windows[i]
			break
		}
	}
	if w == nil {
		return nil, fmt.Errorf("pci ecam %v: %w: no MCFG window for segment %04x bus %02x", a, ErrOutOfRange, a.Seg, a.Bus)
	}
	phys := w.Base + uint64(a.Bus)*acpi.ECAMBusSize
	b, err := e.mapper.Map(phys, acpi.ECAMBusSize)
	if err != nil {
		return nil, fmt.Errorf("pci ecam %v: map bus at %#x: %w", a, phys, err)
	}
	if len(b) < acpi.ECAMBusSize {
		return nil, fmt.Errorf("pci ecam %v: mapper returned %d bytes for bus at %#x, want %d", a, len(b), phys, acpi.ECAMBusSize)
	}
	e.buses[k] = b
	return b, nil
}

func ecamOffset(a Addr, off int) int {
	return int(a.Dev)<<15 | int(a.Fn)<<12 | off
}

// ReadConfig performs one load of size bytes.
func (e *ECAM) ReadConfig(a Addr, off, size int) (uint32, error) {
	if err := checkAccess(a, off, size, ExtConfigSize); err != nil {
		return 0, err
	}
	b, err := e.bus(a)
	if err != nil {
		return 0, err
	}
	p := unsafe.Pointer(&b[ecamOffset(a, off)])
	switch size {
	case 1:
		return uint32(*(*uint8)(p)), nil
	case 2:
		return uint32(*(*uint16)(p)), nil
	default:
		return atomic.LoadUint32((*uint32)(p)), nil
	}
}

// WriteConfig performs one store of size bytes.
func (e *ECAM) WriteConfig(a Addr, off, size int, v uint32) error {
	if err := checkAccess(a, off, size, ExtConfigSize); err != nil {
		return err
	}
	if v > sizeMask(size) {
		return fmt.Errorf("pci ecam %v: %w: value %#x does not fit %d bytes", a, ErrBadAccess, v, size)
	}
	b, err := e.bus(a)
	if err != nil {
		return err
	}
	p := unsafe.Pointer(&b[ecamOffset(a, off)])
	switch size {
	case 1:
		*(*uint8)(p) = uint8(v)
	case 2:
		*(*uint16)(p) = uint16(v)
	default:
		atomic.StoreUint32((*uint32)(p), v)
	}
	return nil
}
