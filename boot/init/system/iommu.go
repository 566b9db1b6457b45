package system

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ether9/ether9/boot/init/status"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/ns/bind"
	"github.com/ether9/ether9/pci"
)

// Remapper owns the machine's DMA-remapping units: it reads the DMAR
// table, walks every unit's device scope and, as functions are bound,
// brings up the unit whose scope holds each one. A unit that covers no
// function we drive is never mapped, let alone turned on: the graphics
// unit of a client board stays as firmware left it. A nil Remapper
// translates nothing.
type Remapper struct {
	plat Platform
	mode iommu.Mode
	logf func(format string, args ...any)
	// scopes is nil when translation is off for every function: no
	// table, a table that cannot be read, or ether9.iommu=off.
	scopes *acpi.ScopeMap

	// reserved are the regions firmware goes on using for some
	// functions' DMA (the DMAR's RMRRs), one entry per function.
	reserved []reservedRegion

	mu     sync.Mutex
	units  []*remapUnit        // in DMAR table order
	unitOf map[pci.Addr]uint64 // the unit base each translated function got
	quota  map[faultSource]*faultQuota
}

// A device that faults at every DMA (one firmware still drives, a broken
// NIC) must not flood the console, whose every fault line takes some 7 ms
// at 115200 baud: the console shows faultLines of one requester's faults
// in each faultWindow and then says how many more it counted. The
// counters and /dev/iommu/faults keep them all.
const (
	faultLines  = 5
	faultWindow = 10 * time.Second
)

// reservedRegion is a reserved memory region and one function that uses
// it.
type reservedRegion struct {
	base, limit uint64 // limit: the last byte
	seg         uint16
	fn          acpi.Func
}

// faultSource is a requester on a unit.
type faultSource struct {
	unit   uint64
	source uint16
}

// faultQuota is what the console showed of one requester's faults since
// start, and how many more it held back.
type faultQuota struct {
	start       time.Duration
	shown, held int
}

// remapUnit is one unit of the DMAR table: what its device scope reaches
// and, once a function it covers binds, our driver of it.
type remapUnit struct {
	cov  acpi.Coverage
	unit *iommu.Unit // nil until a function it covers binds
	err  error       // why it could not be brought up

	faultsSeen uint64 // faults already reported; guarded by Remapper.mu
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

// NewRemapper reads plat's DMAR table and walks every unit's device
// scope; mode is ether9.iommu (strict, deferred or off). The units
// themselves are brought up by UnitFor. Without a table, or when it
// cannot be read, every function gets untranslated DMA and logf says so.
func NewRemapper(plat Platform, mode string, logf func(format string, args ...any)) *Remapper {
	r := &Remapper{plat: plat, logf: logf, unitOf: make(map[pci.Addr]uint64)}
	if mode == "off" {
		logf("iommu: off (ether9.iommu=off)")
		return r
	}
	if len(plat.DMAR) == 0 || plat.MapUnit == nil {
		logf("iommu: none (no DMAR table)")
		return r
	}
	m, err := iommu.ParseMode(mode)
	if err != nil {
		logf("iommu: %v; DMA untranslated", err)
		return r
	}
	r.mode = m
	d, err := acpi.ParseDMAR(plat.DMAR)
	if err != nil {
		logf("iommu: %v; DMA untranslated", err)
		return r
	}
	var read acpi.ConfigReader
	if c := plat.Config; c != nil {
		read = func(seg uint16, bus, dev, fn uint8, off, size int) (uint32, error) {
			return c.ReadConfig(pci.Addr{Seg: seg, Bus: bus, Dev: dev, Fn: fn}, off, size)
		}
	}
	sm, err := d.ScopeMap(read)
	if err != nil {
		// The functions of a scope that cannot be walked fall to the
		// catch-all unit; say which.
		for _, l := range strings.Split(err.Error(), "\n") {
			logf("iommu: %s", l)
		}
	}
	r.scopes = sm
	for _, c := range sm.Units {
		r.units = append(r.units, &remapUnit{cov: c})
	}
	for _, rm := range d.Reserved {
		fns, err := rm.Devices(read)
		if err != nil {
			logf("iommu: %v", err)
		}
		for _, f := range fns {
			r.reserved = append(r.reserved, reservedRegion{base: rm.Base, limit: rm.Limit, seg: rm.Segment, fn: f})
		}
	}
	return r
}

// UnitFor is probe's IOMMUFor: the unit whose scope covers f, brought up
// on first use. Where no unit covers f, or its unit cannot be brought up,
// f's DMA goes untranslated (nil, nil) and the console says so.
func (r *Remapper) UnitFor(f *pci.Function) (*iommu.Unit, error) {
	if r == nil || r.scopes == nil {
		return nil, nil
	}
	c, ok := r.scopes.UnitFor(f.Addr.Seg, f.Addr.Bus, f.Addr.Dev, f.Addr.Fn)
	if !ok {
		r.logf("iommu: no unit covers %v; its DMA untranslated", f.Addr)
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var ru *remapUnit
	for _, x := range r.units {
		if x.base() == c.Unit.Base {
			ru = x
			break
		}
	}
	if ru == nil {
		return nil, fmt.Errorf("unit %#x is not in the DMAR table", c.Unit.Base)
	}
	if ru.unit == nil && ru.err == nil {
		ru.unit, ru.err = r.bringUp(ru)
		if ru.err != nil {
			ru.err = fmt.Errorf("unit %#x: %w", ru.base(), ru.err)
		}
	}
	if ru.err != nil {
		r.logf("iommu: %v; DMA of %v untranslated", ru.err, f.Addr)
		return nil, nil
	}
	r.unitOf[f.Addr] = ru.base()
	return ru.unit, nil
}

// bringUp maps a unit's registers, takes it over in the mode of the
// command line and turns translation on. r.mu is held.
func (r *Remapper) bringUp(ru *remapUnit) (*iommu.Unit, error) {
	regs, err := r.plat.MapUnit(ru.base())
	if err != nil {
		return nil, err
	}
	lines, why := r.lines(ru, iommu.ReadCaps(regs))
	u, err := iommu.New(regs, r.plat.Memory, iommu.Options{Clock: r.plat.Clock, Interrupts: why == "", X2APIC: r.plat.X2APIC, TakeOver: r.plat.AfterFirmware})
	if err != nil {
		return nil, err
	}
	if err := u.SetMode(r.mode, iommu.DefaultBatch); err != nil {
		return nil, err
	}
	r.mapReserved(ru, u)
	if err := u.Enable(); err != nil {
		return nil, fmt.Errorf("enable: %w", err)
	}
	first := len(r.active()) == 0
	r.logf("iommu: unit %#x %s: %v", ru.base(), ru.scope(), u.Caps())
	if took := u.TookOver(); took != "" {
		r.logf("iommu: unit %#x: firmware left %s on; turned off and started afresh", ru.base(), took)
	}
	if first {
		r.logf("iommu: translation on, %d-level", u.Levels())
	}
	switch {
	case why == "":
		var moved []string
		for _, l := range lines {
			entry, err := r.route(u, l)
			if err != nil {
				// The line would be dead: better no remapping than no console.
				err = errors.Join(err, u.StopInterrupts())
				r.logf("iommu: unit %#x: interrupts not remapped: the %s line: %v", ru.base(), l.Name, err)
				return u, nil
			}
			moved = append(moved, fmt.Sprintf("; the %s line through entry %d", l.Name, entry))
		}
		if r.plat.X2APIC {
			moved = append(moved, "; extended mode, to x2APIC ids")
		}
		r.logf("iommu: unit %#x remaps interrupts, compatibility format blocked%s", ru.base(), strings.Join(moved, ""))
	case r.plat.RemapInterrupts:
		r.logf("iommu: unit %#x: interrupts not remapped: %s", ru.base(), why)
	}
	return u, nil
}

// mapReserved maps each reserved region of a function the unit
// translates one to one, before translation goes on (VT-d 8.4): firmware
// goes on using it for that function's DMA (USB legacy emulation,
// integrated graphics), which would otherwise fault from then on, every
// time. A region that cannot be mapped is said and left: the function's
// DMA there faults, as it would without the region.
func (r *Remapper) mapReserved(ru *remapUnit, u *iommu.Unit) {
	for _, rr := range r.reserved {
		f := rr.fn
		if c, ok := r.scopes.UnitFor(rr.seg, f.Bus, f.Dev, f.Fn); !ok || c.Unit.Base != ru.base() {
			continue
		}
		d, err := u.Domain(iommu.SourceID(f.Bus, f.Dev, f.Fn))
		if err == nil {
			err = d.MapReserved(rr.base, rr.limit)
		}
		if err != nil {
			r.logf("iommu: unit %#x: reserved region %#x-%#x of %v not mapped: %v", ru.base(), rr.base, rr.limit, f, err)
			continue
		}
		r.logf("iommu: unit %#x: reserved region %#x-%#x mapped one to one for %v, which firmware goes on using", ru.base(), rr.base, rr.limit, f)
	}
}

// remappedLine is a platform line and the requester id its I/O APIC
// sends with.
type remappedLine struct {
	Line
	source uint16
}

// lines decides whether the unit remaps interrupts: why not, or "" and
// the platform lines it must move onto entries. A line whose I/O APIC
// the unit's scope lists is the unit's; one listed nowhere falls to the
// catch-all unit, which must then not remap, or the line goes dead.
func (r *Remapper) lines(ru *remapUnit, c iommu.Caps) ([]remappedLine, string) {
	if !r.plat.RemapInterrupts {
		return nil, "the platform does not own interrupt delivery"
	}
	if !c.IR || !c.QI {
		return nil, fmt.Sprintf("the unit lacks it (ECAP.IR %v, ECAP.QI %v)", c.IR, c.QI)
	}
	if r.plat.X2APIC && !c.EIM {
		return nil, "the processors run in x2APIC mode and the unit has no extended interrupt mode (ECAP.EIM)"
	}
	var out []remappedLine
	for _, l := range r.plat.Lines {
		if sid, ok := ru.cov.Unit.IOAPIC(l.IOAPIC); ok {
			out = append(out, remappedLine{Line: l, source: sid})
			continue
		}
		if ru.cov.Unit.IncludeAll() && !r.listed(l.IOAPIC) {
			return nil, fmt.Sprintf("no unit's scope lists I/O APIC %d, which carries the %s line", l.IOAPIC, l.Name)
		}
	}
	return out, ""
}

// listed reports whether some unit's scope lists the I/O APIC.
func (r *Remapper) listed(ioapic uint8) bool {
	for _, x := range r.units {
		if _, ok := x.cov.Unit.IOAPIC(ioapic); ok {
			return true
		}
	}
	return false
}

// route moves a platform line onto an entry of u's table.
func (r *Remapper) route(u *iommu.Unit, l remappedLine) (uint16, error) {
	_, entry, err := u.Remap(l.source, l.Message)
	if err != nil {
		return 0, err
	}
	if err := l.Route(entry); err != nil {
		return 0, errors.Join(err, u.Unremap(entry))
	}
	return entry, nil
}

// UnitOf is the register base of the unit translating the function at
// a, false when its DMA is untranslated.
func (r *Remapper) UnitOf(a pci.Addr) (uint64, bool) {
	if r == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.unitOf[a]
	return b, ok
}

// IOMMUUnit is one VT-d unit translating NIC DMA.
type IOMMUUnit struct {
	Base uint64 // register base, from the DMAR table
	Unit *iommu.Unit
}

// Units lists the units brought up, in DMAR table order.
func (r *Remapper) Units() []IOMMUUnit {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active()
}

func (r *Remapper) active() []IOMMUUnit {
	var out []IOMMUUnit
	for _, ru := range r.units {
		if ru.unit != nil {
			out = append(out, IOMMUUnit{Base: ru.base(), Unit: ru.unit})
		}
	}
	return out
}

// ReportIdle names the units no function needed, once binding is done.
func (r *Remapper) ReportIdle() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ru := range r.units {
		if ru.unit == nil && ru.err == nil {
			r.logf("iommu: unit %#x %s: covers no NIC, left untouched", ru.base(), ru.scope())
		}
	}
}

// ReportFaults logs the faults every unit recorded since the last call
// and returns how many the units recorded in all. A unit keeps a bounded
// log and a total; the total says how many are new.
func (r *Remapper) ReportFaults() uint64 {
	if r == nil {
		return 0
	}
	var sum uint64
	now := r.plat.Clock.Now()
	for _, u := range r.Units() {
		log := u.Unit.Faults()
		total := u.Unit.Stats().Faults
		fresh := int(total - r.markSeen(u.Base, total))
		sum += total
		if fresh > len(log) {
			r.logf("iommu: %d faults dropped from the log of unit %#x", fresh-len(log), u.Base)
			fresh = len(log)
		}
		for _, f := range log[len(log)-fresh:] {
			if r.mayShow(faultSource{u.Base, f.Source}, now) {
				r.logf("iommu: fault %v", f)
			}
		}
	}
	r.endWindows(now)
	return sum
}

// mayShow counts a fault of src against its quota and says whether the
// console shows it.
func (r *Remapper) mayShow(src faultSource, now time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.quota == nil {
		r.quota = map[faultSource]*faultQuota{}
	}
	q := r.quota[src]
	if q == nil {
		q = &faultQuota{start: now}
		r.quota[src] = q
	}
	if q.shown < faultLines {
		q.shown++
		return true
	}
	q.held++
	return false
}

// endWindows says how many faults each requester had held back over a
// window that has ended, and starts it afresh.
func (r *Remapper) endWindows(now time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for src, q := range r.quota {
		if now-q.start < faultWindow {
			continue
		}
		if q.held > 0 {
			r.logf("iommu: %d more faults from %s on unit %#x in %v, not shown (/dev/iommu/faults, the counters)", q.held, iommu.SourceString(src.source), src.unit, now-q.start)
		}
		delete(r.quota, src)
	}
}

// markSeen records total as the faults reported of the unit at base and
// returns the number reported before.
func (r *Remapper) markSeen(base, total uint64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ru := range r.units {
		if ru.base() == base {
			seen := ru.faultsSeen
			ru.faultsSeen = total
			return seen
		}
	}
	return total
}

// Status is every unit's line on the status page, in DMAR table order.
func (r *Remapper) Status() []status.IOMMUUnit {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []status.IOMMUUnit
	for _, ru := range r.units {
		st := status.IOMMUUnit{Base: ru.base(), Scope: ru.scope()}
		switch {
		case ru.err != nil:
			st.State = "failed"
		case ru.unit == nil:
			st.State = "idle"
		default:
			st.State = "off"
			if ru.unit.Enabled() {
				st.State = "on"
			}
			stats := ru.unit.Stats()
			st.Levels, st.Domains, st.Faults = ru.unit.Levels(), stats.Domains, stats.Faults
		}
		out = append(out, st)
	}
	return out
}

// Disable turns translation off on every unit brought up.
func (r *Remapper) Disable() error {
	var errs []error
	for _, u := range r.Units() {
		if err := u.Unit.Disable(); err != nil {
			errs = append(errs, fmt.Errorf("unit %#x: %w", u.Base, err))
		}
	}
	return errors.Join(errs...)
}

// IOMMUs lists the units translating NIC DMA, in DMAR table order.
func (s *System) IOMMUs() []IOMMUUnit { return s.remap.Units() }

// IOMMU is the first unit translating NIC DMA (the only one on most
// machines), nil when translation is off.
func (s *System) IOMMU() *iommu.Unit {
	if us := s.IOMMUs(); len(us) > 0 {
		return us[0].Unit
	}
	return nil
}

// remaps lists the active units for the namespace.
func (s *System) remaps() []bind.Remap {
	var out []bind.Remap
	for _, u := range s.IOMMUs() {
		out = append(out, bind.Remap{Base: u.Base, Unit: u.Unit})
	}
	return out
}
