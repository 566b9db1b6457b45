package pci

import (
	"errors"
	"fmt"
)

// MemWindow is a range of memory addresses the host bridge routes to PCI.
// Enumerate, given one in Options.Assign, takes addresses from it for the
// memory BARs that firmware left unassigned: a minimal loader (QEMU's
// qboot) assigns none, where a PC BIOS or UEFI assigns every one.
type MemWindow struct {
	Base, End uint64 // [Base, End)
	next      uint64
}

// ErrWindowFull says a BAR did not fit in what is left of the window.
var ErrWindowFull = errors.New("no room left in the PCI window")

// take returns an address for size bytes aligned to size, as a BAR must
// be (PCI Local Bus 3.0, 6.2.5.1: the size is a power of two, and the
// address bits below it read as zero).
func (w *MemWindow) take(size uint64) (uint64, error) {
	if w.next < w.Base {
		w.next = w.Base
	}
	at := (w.next + size - 1) &^ (size - 1)
	if at < w.next || at+size < at || at+size > w.End {
		return 0, fmt.Errorf("%#x bytes: %w [%#x, %#x), %#x used", size, ErrWindowFull, w.Base, w.End, w.next-w.Base)
	}
	w.next = at + size
	return at, nil
}

// assign gives each memory BAR of f that reads zero an address from w
// and writes it to the register, both halves of a 64-bit BAR. I/O BARs
// are left as they are (nothing here uses them); so is a bridge, whose
// windows would have to be programmed as well, and so is the COMMAND
// register: the driver turns memory decoding on.
func (w *MemWindow) assign(c Config, f *Function) error {
	if f.IsBridge() {
		return nil
	}
	var errs []error
	for i := range f.BARs {
		b := &f.BARs[i]
		if !b.IsMem() || b.Addr != 0 || b.Size == 0 {
			continue
		}
		at, err := w.take(b.Size)
		if err != nil {
			errs = append(errs, fmt.Errorf("pci %v bar%d: %w", f.Addr, i, err))
			continue
		}
		off := RegBAR0 + 4*i
		lo, err := read32(c, f.Addr, off)
		if err == nil {
			err = c.WriteConfig(f.Addr, off, 4, lo&^barMemAddrMask|uint32(at))
		}
		if err == nil && b.Kind == BARMem64 {
			err = c.WriteConfig(f.Addr, off+4, 4, uint32(at>>32))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pci %v bar%d: assigning %#x: %w", f.Addr, i, at, err))
			continue
		}
		b.Addr = at
		b.Assigned = true
	}
	return errors.Join(errs...)
}
