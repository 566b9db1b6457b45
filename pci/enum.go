package pci

import (
	"errors"
	"fmt"
	"slices"
)

// Options control enumeration.
type Options struct {
	// Segment is the PCI segment (domain) to walk.
	Segment uint16
	// AllBuses probes every bus number 0-255 instead of following bridges
	// from bus 0. It also finds root buses other than bus 0 (hosts with
	// several host bridges) and functions behind misnumbered bridges.
	AllBuses bool
	// NoSizing decodes BARs without sizing them, writing nothing to config
	// space: for functions that another operating system is driving. An
	// accessor that is also a BARSizer (sysfs) still supplies sizes.
	NoSizing bool
	// Assign, when set, gives the memory BARs that firmware left
	// unassigned addresses from the window, on the functions of the root
	// bus (behind a bridge its windows would need programming too). It
	// needs sizing.
	Assign *MemWindow
}

// BARSizer is implemented by accessors that know BAR sizes without
// writing BARs: Linux's sysfs resource files.
type BARSizer interface {
	BARSizes(a Addr) ([6]uint64, error)
}

// Probe reads the function at a: ids, class, header, BARs (sized unless
// opt.NoSizing) and capabilities. It returns ErrAbsent when nothing
// answers. When part of the function cannot be read, it returns what it
// read along with the error.
func Probe(c Config, a Addr, opt Options) (*Function, error) {
	id, err := read32(c, a, RegVendorID)
	if err != nil {
		return nil, fmt.Errorf("pci %v: vendor id: %w", a, err)
	}
	if absentID(id) {
		return nil, fmt.Errorf("pci %v: %w", a, ErrAbsent)
	}
	return probe(c, a, id, opt)
}

// probe reads the rest of a function whose vendor/device dword is id.
func probe(c Config, a Addr, id uint32, opt Options) (*Function, error) {
	f := &Function{Addr: a, Vendor: uint16(id), Device: uint16(id >> 16)}
	for i := range f.BARs {
		f.BARs[i].Index = i
	}
	cls, err := read32(c, a, RegRevisionID)
	if err != nil {
		return f, fmt.Errorf("pci %v: class: %w", a, err)
	}
	f.Revision, f.Class = uint8(cls), cls>>8
	ht, err := read8(c, a, RegHeaderType)
	if err != nil {
		return f, fmt.Errorf("pci %v: header type: %w", a, err)
	}
	f.Header = ht & HeaderTypeMask

	var errs []error
	switch f.Header {
	case HeaderNormal:
		sub, err := read32(c, a, RegSubVendorID)
		if err != nil {
			errs = append(errs, fmt.Errorf("pci %v: subsystem: %w", a, err))
		}
		f.SubVendor, f.SubDevice = uint16(sub), uint16(sub>>16)
	case HeaderBridge, HeaderCardBus:
		buses, err := read32(c, a, RegPrimaryBus&^3)
		if err != nil {
			errs = append(errs, fmt.Errorf("pci %v: bridge bus numbers: %w", a, err))
		}
		f.Primary, f.Secondary, f.Subordinate = uint8(buses), uint8(buses>>8), uint8(buses>>16)
	default:
		errs = append(errs, fmt.Errorf("pci %v: unknown header type %#x", a, f.Header))
		return f, errors.Join(errs...)
	}
	f.BARs, err = ReadBARs(c, a, !opt.NoSizing)
	errs = append(errs, err)
	if sz, ok := c.(BARSizer); ok && opt.NoSizing {
		errs = append(errs, applySizes(f, sz))
	}
	f.Caps, err = Capabilities(c, a)
	errs = append(errs, err)
	return f, errors.Join(errs...)
}

// applySizes fills the sizes of f's decoded BARs from sz. A size the
// accessor knows for a slot where no BAR was decoded is an error: the two
// views of the function disagree.
func applySizes(f *Function, sz BARSizer) error {
	sizes, err := sz.BARSizes(f.Addr)
	if err != nil {
		return err
	}
	for i, n := range sizes {
		b := &f.BARs[i]
		switch {
		case b.Kind != BARNone:
			b.Size = n
		case n != 0:
			return fmt.Errorf("pci %v: bar%d: %#x bytes assigned, but the register decodes as absent", f.Addr, i, n)
		}
	}
	return nil
}

// IsBridge reports whether the function is a PCI-to-PCI or CardBus bridge
// that forwards configuration cycles to a secondary bus.
func (f *Function) IsBridge() bool {
	return f.Header == HeaderBridge || f.Header == HeaderCardBus
}

// multifunction reads the multi-function bit of the function at a.
func multifunction(c Config, a Addr) (bool, error) {
	ht, err := read8(c, a, RegHeaderType)
	if err != nil {
		return false, fmt.Errorf("pci %v: header type: %w", a, err)
	}
	return ht&HeaderMultiFunct != 0, nil
}

// Enumerate finds every function of a segment: bus 0 and, through each
// bridge's secondary bus number, the buses behind it (or every bus with
// opt.AllBuses). Functions 1-7 of a device are probed only when function 0
// sets the multi-function bit. Bridges are followed as firmware numbered
// them; bus numbers are not assigned here. The result is in address order.
// A function that cannot be fully read is still listed, and its error is
// joined into the returned error.
func Enumerate(c Config, opt Options) ([]*Function, error) {
	e := enumerator{c: c, opt: opt, seen: make(map[uint8]bool)}
	if opt.AllBuses {
		for b := 0; b < 256; b++ {
			e.scanBus(uint8(b), false)
		}
	} else {
		e.scanBus(0, true)
	}
	slices.SortFunc(e.fns, func(x, y *Function) int { return x.Addr.Compare(y.Addr) })
	return e.fns, errors.Join(e.errs...)
}

type enumerator struct {
	c    Config
	opt  Options
	seen map[uint8]bool // buses scanned
	fns  []*Function
	errs []error
}

func (e *enumerator) scanBus(bus uint8, follow bool) {
	if e.seen[bus] {
		e.errs = append(e.errs, fmt.Errorf("pci %04x:%02x: bus reached twice (bridge numbering loops)", e.opt.Segment, bus))
		return
	}
	e.seen[bus] = true
	for dev := uint8(0); dev < 32; dev++ {
		a := Addr{Seg: e.opt.Segment, Bus: bus, Dev: dev}
		present, err := e.probe(a, follow)
		if errors.Is(err, ErrOutOfRange) {
			// The accessor does not reach this bus (outside every ECAM
			// window): only an error when a bridge led here.
			if follow {
				e.errs = append(e.errs, err)
			}
			return
		}
		if err != nil {
			e.errs = append(e.errs, err)
		}
		if !present {
			continue
		}
		multi, err := multifunction(e.c, a)
		if err != nil {
			e.errs = append(e.errs, err)
			continue
		}
		if !multi {
			continue
		}
		for fn := uint8(1); fn < 8; fn++ {
			a.Fn = fn
			if _, err := e.probe(a, follow); err != nil {
				e.errs = append(e.errs, err)
			}
		}
	}
}

// probe adds the function at a, descends through it if it is a bridge and
// follow is set, and reports whether anything answered. An absent function
// is no error; the error of a function that answered only in part is
// recorded and the function kept. The error of a function that could not
// be read at all is returned for the caller to judge.
func (e *enumerator) probe(a Addr, follow bool) (bool, error) {
	id, err := read32(e.c, a, RegVendorID)
	if err != nil {
		return false, fmt.Errorf("pci %v: vendor id: %w", a, err)
	}
	if absentID(id) {
		return false, nil // the common case of a bus scan: keep it cheap
	}
	f, err := probe(e.c, a, id, e.opt)
	if err != nil {
		e.errs = append(e.errs, err)
	}
	if w := e.opt.Assign; w != nil && !e.opt.NoSizing && a.Bus == 0 { // the root bus (Options.Assign)
		if err := w.assign(e.c, f); err != nil {
			e.errs = append(e.errs, err)
		}
	}
	e.fns = append(e.fns, f)
	if !follow || !f.IsBridge() {
		return true, nil
	}
	switch {
	case f.Secondary == 0:
		// Not numbered by firmware: nothing behind it can be reached.
	case f.Secondary <= a.Bus:
		e.errs = append(e.errs, fmt.Errorf("pci %v: bridge secondary bus %02x is not below its own bus", a, f.Secondary))
	case f.Subordinate < f.Secondary:
		e.errs = append(e.errs, fmt.Errorf("pci %v: bridge subordinate bus %02x below secondary %02x", a, f.Subordinate, f.Secondary))
	default:
		e.scanBus(f.Secondary, true)
	}
	return true, nil
}
