package system

import (
	"fmt"
	"strings"

	"github.com/ether9/ether9/boot/init/status"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/ns/bind"
	"github.com/ether9/ether9/pci"
)

// remapUnit is one DMA-remapping unit of the DMAR table: what its device
// scope reaches and, once a NIC it covers binds, our driver of it. A unit
// that covers no NIC we drive is never mapped, let alone turned on: the
// graphics unit of a client board stays as firmware left it.
type remapUnit struct {
	cov  acpi.Coverage
	unit *iommu.Unit // nil until a NIC it covers binds
	err  error       // why it could not be brought up

	faultsSeen uint64 // faults already printed; guarded by System.mu
}

func (r *remapUnit) base() uint64 { return r.cov.Unit.Base }

// scope says what the unit covers, for the console and the units file.
func (r *remapUnit) scope() string {
	var parts []string
	if r.cov.Unit.IncludeAll() {
		parts = append(parts, "include-all")
	}
	for _, x := range r.cov.Reach {
		parts = append(parts, x.String())
	}
	if len(parts) == 0 {
		return "no PCI scope"
	}
	return strings.Join(parts, ", ")
}

// IOMMUUnit is one VT-d unit translating NIC DMA.
type IOMMUUnit struct {
	Base uint64 // register base, from the DMAR table
	Unit *iommu.Unit
}

// IOMMUs lists the units translating NIC DMA, in DMAR table order.
func (s *System) IOMMUs() []IOMMUUnit {
	var out []IOMMUUnit
	for _, r := range s.remap {
		if r.unit != nil {
			out = append(out, IOMMUUnit{Base: r.base(), Unit: r.unit})
		}
	}
	return out
}

// IOMMU is the first unit translating NIC DMA (the only one on most
// machines), nil when translation is off.
func (s *System) IOMMU() *iommu.Unit {
	if us := s.IOMMUs(); len(us) > 0 {
		return us[0].Unit
	}
	return nil
}

// takeIOMMU reads the DMAR table and walks every unit's device scope. The
// units themselves are brought up as the NICs they cover bind. Without a
// table, or when it cannot be read, the NICs get untranslated DMA and the
// console says so.
func (s *System) takeIOMMU() {
	if s.opt.IOMMU == "off" {
		s.logf("iommu: off (ether9.iommu=off)")
		return
	}
	if len(s.plat.DMAR) == 0 || s.plat.MapUnit == nil {
		s.logf("iommu: none (no DMAR table)")
		return
	}
	if _, err := iommu.ParseMode(s.opt.IOMMU); err != nil {
		s.logf("iommu: %v; DMA untranslated", err)
		return
	}
	d, err := acpi.ParseDMAR(s.plat.DMAR)
	if err != nil {
		s.logf("iommu: %v; DMA untranslated", err)
		return
	}
	var read acpi.ConfigReader
	if c := s.plat.Config; c != nil {
		read = func(seg uint16, bus, dev, fn uint8, off, size int) (uint32, error) {
			return c.ReadConfig(pci.Addr{Seg: seg, Bus: bus, Dev: dev, Fn: fn}, off, size)
		}
	}
	m, err := d.ScopeMap(read)
	if err != nil {
		// The functions of a scope that cannot be walked fall to the
		// catch-all unit; say which.
		for _, l := range strings.Split(err.Error(), "\n") {
			s.logf("iommu: %s", l)
		}
	}
	s.scopes = m
	for _, c := range m.Units {
		s.remap = append(s.remap, &remapUnit{cov: c})
	}
}

// unitFor is probe's IOMMUFor: the unit whose scope covers f, brought up
// on first use. Where no unit covers f, or its unit cannot be brought up,
// f's DMA goes untranslated and the console says so.
func (s *System) unitFor(f *pci.Function) (*iommu.Unit, error) {
	c, ok := s.scopes.UnitFor(f.Addr.Seg, f.Addr.Bus, f.Addr.Dev, f.Addr.Fn)
	if !ok {
		s.logf("iommu: no unit covers %v; its DMA untranslated", f.Addr)
		return nil, nil
	}
	var r *remapUnit
	for _, x := range s.remap {
		if x.base() == c.Unit.Base {
			r = x
			break
		}
	}
	if r == nil {
		return nil, fmt.Errorf("unit %#x is not in the DMAR table", c.Unit.Base)
	}
	if r.unit == nil && r.err == nil {
		r.unit, r.err = s.bringUp(r)
		if r.err != nil {
			r.err = fmt.Errorf("unit %#x: %w", r.base(), r.err)
		}
	}
	if r.err != nil {
		s.logf("iommu: %v; DMA of %v untranslated", r.err, f.Addr)
		return nil, nil
	}
	s.unitOf[f.Addr] = r.base()
	return r.unit, nil
}

// bringUp maps a unit's registers, takes it over in the mode of the
// command line and turns translation on.
func (s *System) bringUp(r *remapUnit) (*iommu.Unit, error) {
	regs, err := s.plat.MapUnit(r.base())
	if err != nil {
		return nil, err
	}
	u, err := iommu.New(regs, s.plat.Memory, iommu.Options{Clock: s.plat.Clock})
	if err != nil {
		return nil, err
	}
	mode, err := iommu.ParseMode(s.opt.IOMMU)
	if err != nil {
		return nil, err
	}
	if err := u.SetMode(mode, iommu.DefaultBatch); err != nil {
		return nil, err
	}
	if err := u.Enable(); err != nil {
		return nil, fmt.Errorf("enable: %w", err)
	}
	first := s.IOMMU() == nil
	s.logf("iommu: unit %#x %s: %v", r.base(), r.scope(), u.Caps())
	if first {
		s.logf("iommu: translation on, %d-level", u.Levels())
	}
	return u, nil
}

// reportIdle names the units no NIC needed, once binding is done.
func (s *System) reportIdle() {
	for _, r := range s.remap {
		if r.unit == nil && r.err == nil {
			s.logf("iommu: unit %#x %s: covers no NIC, left untouched", r.base(), r.scope())
		}
	}
}

// remaps lists the active units for the namespace.
func (s *System) remaps() []bind.Remap {
	var out []bind.Remap
	for _, u := range s.IOMMUs() {
		out = append(out, bind.Remap{Base: u.Base, Unit: u.Unit})
	}
	return out
}

// unitStatus is a unit's line on the status page.
func (s *System) unitStatus(r *remapUnit) status.IOMMUUnit {
	st := status.IOMMUUnit{Base: r.base(), Scope: r.scope()}
	switch {
	case r.err != nil:
		st.State = "failed"
	case r.unit == nil:
		st.State = "idle"
	default:
		st.State = "off"
		if r.unit.Enabled() {
			st.State = "on"
		}
		stats := r.unit.Stats()
		st.Levels, st.Domains, st.Faults = r.unit.Levels(), stats.Domains, stats.Faults
	}
	return st
}
