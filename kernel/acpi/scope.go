package acpi

import (
	"errors"
	"fmt"
)

// Configuration space offsets a scope walk reads (PCI Local Bus 3.0 6.1,
// PCI-to-PCI Bridge Architecture 1.2 3.2).
const (
	cfgVendorID    = 0x00
	cfgHeaderType  = 0x0e
	cfgPrimaryBus  = 0x18 // primary, secondary, subordinate, latency
	headerTypeMask = 0x7f
	headerNormal   = 0
	headerBridge   = 1
	headerCardBus  = 2
	vendorAbsent   = 0xffff
)

// ConfigReader reads size bytes (1, 2 or 4, aligned) at off in the
// configuration space of seg:bus:dev.fn. An absent function reads all
// ones, as on hardware.
type ConfigReader func(seg uint16, bus, dev, fn uint8, off, size int) (uint32, error)

// Func is a PCI function's address inside a segment.
type Func struct{ Bus, Dev, Fn uint8 }

func (f Func) String() string { return fmt.Sprintf("%02x:%02x.%x", f.Bus, f.Dev, f.Fn) }

// Reach is what one PCI device scope entry covers once its path has been
// walked through the bridges: the function the path ends at and, for a
// bridge scope, every bus below that bridge.
type Reach struct {
	Type uint8 // ScopePCIEndpoint or ScopePCIBridge
	Func Func
	// Secondary and Subordinate are the buses behind a bridge scope's
	// bridge, as firmware numbered them; zero for an endpoint.
	Secondary, Subordinate uint8
}

// Covers reports whether the function at bus:dev.fn lies in the reach.
func (r Reach) Covers(bus, dev, fn uint8) bool {
	if r.Func == (Func{bus, dev, fn}) {
		return true
	}
	return r.Type == ScopePCIBridge && bus >= r.Secondary && bus <= r.Subordinate
}

func (r Reach) String() string {
	if r.Type == ScopePCIBridge {
		return fmt.Sprintf("bridge %v buses %02x-%02x", r.Func, r.Secondary, r.Subordinate)
	}
	return fmt.Sprintf("endpoint %v", r.Func)
}

// Coverage is a remapping unit and the PCI functions its device scopes
// reach. An INCLUDE_PCI_ALL unit also takes every function of its segment
// that no other unit's scope names; Reach then lists only what its scope
// names explicitly.
type Coverage struct {
	Unit  DRHD
	Reach []Reach
}

// Covers reports whether the unit's scope names the function at
// seg:bus:dev.fn, by itself or through a bridge above it. It does not
// count INCLUDE_PCI_ALL.
func (c Coverage) Covers(seg uint16, bus, dev, fn uint8) bool {
	if c.Unit.Segment != seg {
		return false
	}
	for _, r := range c.Reach {
		if r.Covers(bus, dev, fn) {
			return true
		}
	}
	return false
}

// Resolve walks the unit's PCI device scopes (VT-d specification 8.3.1):
// the first path entry is a device on the start bus, and each further
// entry is a device on the secondary bus of the bridge the entry before
// named. A bridge scope reaches the buses from its bridge's secondary to
// its subordinate. Scopes of other types (I/O APIC, HPET, ACPI namespace
// devices) name no PCI function and are passed over.
//
// read may be nil: then only single-hop endpoint scopes resolve, taken as
// written. A scope that cannot be walked (a hop absent or not a bridge,
// bus numbers unassigned, a type that does not match the function's
// header) reaches nothing; its error is joined into the returned one and
// the other scopes still resolve.
func (u DRHD) Resolve(read ConfigReader) (Coverage, error) {
	c := Coverage{Unit: u}
	var errs []error
	for i, s := range u.Scopes {
		if s.Type != ScopePCIEndpoint && s.Type != ScopePCIBridge {
			continue
		}
		r, err := resolveScope(u.Segment, s, read)
		if err != nil {
			errs = append(errs, fmt.Errorf("acpi DMAR: unit %#x scope %d (%s): %w", u.Base, i, scopeString(s), err))
			continue
		}
		c.Reach = append(c.Reach, r)
	}
	return c, errors.Join(errs...)
}

// Devices resolves a reserved memory region's scopes to the functions
// that go on using it for DMA (VT-d 8.4: each entry names an endpoint);
// read as for DRHD.Resolve. A scope that cannot be walked, or names a
// bridge, reaches nothing; its error is joined into the returned one and
// the other scopes still resolve.
func (r RMRR) Devices(read ConfigReader) ([]Func, error) {
	var out []Func
	var errs []error
	for i, s := range r.Scopes {
		if s.Type != ScopePCIEndpoint {
			errs = append(errs, fmt.Errorf("acpi DMAR: reserved region %#x-%#x scope %d (%s): not an endpoint", r.Base, r.Limit, i, scopeString(s)))
			continue
		}
		reach, err := resolveScope(r.Segment, s, read)
		if err != nil {
			errs = append(errs, fmt.Errorf("acpi DMAR: reserved region %#x-%#x scope %d (%s): %w", r.Base, r.Limit, i, scopeString(s), err))
			continue
		}
		out = append(out, reach.Func)
	}
	return out, errors.Join(errs...)
}

func resolveScope(seg uint16, s DeviceScope, read ConfigReader) (Reach, error) {
	if len(s.Path) == 0 {
		return Reach{}, errors.New("empty path")
	}
	f := Func{s.StartBus, s.Path[0].Dev, s.Path[0].Fn}
	if read == nil {
		if s.Type != ScopePCIEndpoint || len(s.Path) != 1 {
			return Reach{}, errors.New("needs configuration space to walk")
		}
		return Reach{Type: ScopePCIEndpoint, Func: f}, nil
	}
	for _, hop := range s.Path[1:] {
		sec, _, err := bridgeBuses(seg, f, read)
		if err != nil {
			return Reach{}, err
		}
		f = Func{sec, hop.Dev, hop.Fn}
	}
	r := Reach{Type: s.Type, Func: f}
	hdr, err := header(seg, f, read)
	if errors.Is(err, errAbsent) && s.Type == ScopePCIEndpoint {
		// Firmware names functions that are not there yet: the virtual
		// functions of an SR-IOV device before they are enabled (QEMU's
		// igb has eight), a hot-plug slot's device. The scope holds for
		// whatever appears at that address, as Linux binds such scopes
		// when a device is added.
		return r, nil
	}
	if err != nil {
		return Reach{}, err
	}
	switch s.Type {
	case ScopePCIEndpoint:
		if hdr != headerNormal {
			return Reach{}, fmt.Errorf("endpoint scope names %v, whose header type is %d", f, hdr)
		}
	case ScopePCIBridge:
		if r.Secondary, r.Subordinate, err = bridgeBuses(seg, f, read); err != nil {
			return Reach{}, err
		}
	}
	return r, nil
}

// errAbsent says that no function answers at an address.
var errAbsent = errors.New("no function there")

// header returns the header type of the function at f, or an error when
// nothing answers there (errAbsent).
func header(seg uint16, f Func, read ConfigReader) (uint8, error) {
	id, err := read(seg, f.Bus, f.Dev, f.Fn, cfgVendorID, 2)
	if err != nil {
		return 0, fmt.Errorf("%v: vendor id: %w", f, err)
	}
	if id == vendorAbsent {
		return 0, fmt.Errorf("%v: %w", f, errAbsent)
	}
	h, err := read(seg, f.Bus, f.Dev, f.Fn, cfgHeaderType, 1)
	if err != nil {
		return 0, fmt.Errorf("%v: header type: %w", f, err)
	}
	return uint8(h) & headerTypeMask, nil
}

// bridgeBuses returns the secondary and subordinate bus numbers of the
// bridge at f. Buses are numbered downward from the root, so a secondary
// bus at or above the bridge's own is unassigned or a loop.
func bridgeBuses(seg uint16, f Func, read ConfigReader) (secondary, subordinate uint8, err error) {
	hdr, err := header(seg, f, read)
	if err != nil {
		return 0, 0, err
	}
	if hdr != headerBridge && hdr != headerCardBus {
		return 0, 0, fmt.Errorf("%v: header type %d is no bridge", f, hdr)
	}
	v, err := read(seg, f.Bus, f.Dev, f.Fn, cfgPrimaryBus, 4)
	if err != nil {
		return 0, 0, fmt.Errorf("%v: bus numbers: %w", f, err)
	}
	secondary, subordinate = uint8(v>>8), uint8(v>>16)
	if secondary <= f.Bus || subordinate < secondary {
		return 0, 0, fmt.Errorf("bridge %v: secondary bus %02x, subordinate %02x: not numbered below it", f, secondary, subordinate)
	}
	return secondary, subordinate, nil
}

func scopeString(s DeviceScope) string {
	kind := fmt.Sprintf("type %d", s.Type)
	switch s.Type {
	case ScopePCIEndpoint:
		kind = "endpoint"
	case ScopePCIBridge:
		kind = "bridge"
	}
	b := fmt.Appendf(nil, "%s bus %02x path", kind, s.StartBus)
	for _, p := range s.Path {
		b = fmt.Appendf(b, " %02x.%x", p.Dev, p.Fn)
	}
	return string(b)
}

// ScopeMap says which remapping unit translates each PCI function: the
// table's units with their scopes walked.
type ScopeMap struct {
	Units []Coverage // in table order
}

// ScopeMap resolves every unit's device scopes through read (see
// DRHD.Resolve). Scopes that cannot be walked are reported in the error
// and leave their functions to the segment's INCLUDE_PCI_ALL unit; the
// map is always usable.
func (d *DMAR) ScopeMap(read ConfigReader) (*ScopeMap, error) {
	m := &ScopeMap{}
	var errs []error
	for _, u := range d.Units {
		c, err := u.Resolve(read)
		errs = append(errs, err)
		m.Units = append(m.Units, c)
	}
	return m, errors.Join(errs...)
}

// UnitFor returns the unit that translates the function at seg:bus:dev.fn:
// a unit whose scope names it or a bridge above it, else the segment's
// INCLUDE_PCI_ALL unit. The specification forbids two units' scopes to
// overlap; where firmware does it anyway, the first in the table wins.
func (m *ScopeMap) UnitFor(seg uint16, bus, dev, fn uint8) (Coverage, bool) {
	for _, c := range m.Units {
		if !c.Unit.IncludeAll() && c.Covers(seg, bus, dev, fn) {
			return c, true
		}
	}
	for _, c := range m.Units {
		if c.Unit.Segment == seg && c.Unit.IncludeAll() {
			return c, true
		}
	}
	return Coverage{}, false
}

// UnitFor returns the remapping unit that translates the function at
// seg:bus:dev.fn without reading configuration space: a unit whose scope
// names it by a single-hop endpoint path, else the segment's
// INCLUDE_PCI_ALL unit. Functions behind bridges need the bridges' bus
// numbers; ScopeMap reads them.
func (d *DMAR) UnitFor(seg uint16, bus, dev, fn uint8) (DRHD, bool) {
	m, _ := d.ScopeMap(nil) // scopes that need config space are left out
	c, ok := m.UnitFor(seg, bus, dev, fn)
	return c.Unit, ok
}
