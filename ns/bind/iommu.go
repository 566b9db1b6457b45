package bind

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/ns"
)

// Remap is one VT-d unit translating device DMA.
type Remap struct {
	Base uint64 // register base, from the DMAR table
	Unit *iommu.Unit
}

// Domain is one device's translation domain.
type Domain struct {
	Source uint16 // requester id
	ID     uint16 // domain id, unique within its unit
	Name   string // "ether0"
	Unit   uint64 // register base of the unit holding it
}

// IOMMU registers /dev/iommu/{ctl,stats,faults,interrupts,domains,units}
// for the machine's units together, and
// /dev/iommu/BASE/{stats,faults,interrupts,domains} (BASE the register
// base in hex) for each. With one unit the top files
// read as that unit's; with several, ctl commands go to every unit, stats
// are summed, faults and domains are listed unit after unit. domains
// lists the requester ids that have a domain, with the function's name.
func IOMMU(n *ns.Namespace, units []Remap, domains func() []Domain) error {
	if len(units) == 0 {
		return errors.New("bind iommu: no unit")
	}
	files := []struct {
		name string
		f    ns.File
	}{
		{"ctl", ns.Ctl{Render: func() (string, error) {
			// Commands reach every unit, so they share their mode.
			m, batch := units[0].Unit.Mode()
			if m == iommu.Strict {
				return fmt.Sprintf("%v\n", m), nil
			}
			return fmt.Sprintf("%v %d\n", m, batch), nil
		}, Do: func(cmd string) error {
			var errs []error
			for _, u := range units {
				if err := u.Unit.Ctl(cmd); err != nil {
					errs = append(errs, fmt.Errorf("unit %#x: %w", u.Base, err))
				}
			}
			return errors.Join(errs...)
		}}},
		{"stats", ns.Text(func() string {
			var sum iommu.Stats
			for i, u := range units {
				if i == 0 {
					sum = u.Unit.Stats()
				} else {
					sum = addStats(sum, u.Unit.Stats())
				}
			}
			return sum.String()
		})},
		{"faults", ns.Text(func() string { return faultLines(units...) })},
		{"interrupts", ns.Text(func() string { return interruptLines(units...) })},
		{"domains", ns.Text(func() string { return domainLines(domains, 0, len(units) > 1) })},
		{"units", ns.Text(func() string {
			var b strings.Builder
			for _, u := range units {
				st := u.Unit.Stats()
				state := "off"
				if u.Unit.Enabled() {
					state = "on"
				}
				fmt.Fprintf(&b, "%#x translation %s %d-level %v domains %d faults %d\n", u.Base, state, u.Unit.Levels(), st.Mode, st.Domains, st.Faults)
			}
			return b.String()
		})},
	}
	for _, f := range files {
		if err := n.Add("/dev/iommu/"+f.name, f.f); err != nil {
			return fmt.Errorf("bind iommu: %w", err)
		}
	}
	for _, u := range units {
		dir := fmt.Sprintf("/dev/iommu/%x/", u.Base)
		for name, f := range map[string]ns.File{
			"stats":      ns.Text(func() string { return u.Unit.Stats().String() }),
			"faults":     ns.Text(func() string { return faultLines(u) }),
			"interrupts": ns.Text(func() string { return interruptLines(u) }),
			"domains":    ns.Text(func() string { return domainLines(domains, u.Base, false) }),
		} {
			if err := n.Add(dir+name, f); err != nil {
				return fmt.Errorf("bind iommu: %w", err)
			}
		}
	}
	return nil
}

// interruptLines lists the interrupt remapping entries in use: which
// requester may raise which vector on which processor.
func interruptLines(units ...Remap) string {
	var b strings.Builder
	for _, u := range units {
		for _, i := range u.Unit.Interrupts() {
			if len(units) > 1 {
				fmt.Fprintf(&b, "%#x ", u.Base)
			}
			fmt.Fprintf(&b, "%v\n", i)
		}
	}
	return b.String()
}

func faultLines(units ...Remap) string {
	var b strings.Builder
	for _, u := range units {
		for _, f := range u.Unit.Faults() {
			fmt.Fprintf(&b, "%v\n", f)
		}
	}
	return b.String()
}

// domainLines lists the domains of the unit at base, or of every unit
// when base is 0, naming the unit when withUnit is set.
func domainLines(domains func() []Domain, base uint64, withUnit bool) string {
	if domains == nil {
		return ""
	}
	var b strings.Builder
	for _, d := range domains() {
		if base != 0 && d.Unit != base {
			continue
		}
		fmt.Fprintf(&b, "%s domain %d %s", iommu.SourceString(d.Source), d.ID, d.Name)
		if withUnit {
			fmt.Fprintf(&b, " unit %#x", d.Unit)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// addStats sums two units' counters. Mode and batch are the first's:
// commands set them on every unit alike.
func addStats(a, b iommu.Stats) iommu.Stats {
	a.Maps += b.Maps
	a.Unmaps += b.Unmaps
	a.PageInvalidations += b.PageInvalidations
	a.DomainInvalidations += b.DomainInvalidations
	a.GlobalInvalidations += b.GlobalInvalidations
	a.ContextInvalidations += b.ContextInvalidations
	a.RefusedInvalidations += b.RefusedInvalidations
	a.QueuedSubmissions += b.QueuedSubmissions
	a.InterruptEntries += b.InterruptEntries
	a.Faults += b.Faults
	a.InterruptFaults += b.InterruptFaults
	a.FaultOverflows += b.FaultOverflows
	a.FaultEvents += b.FaultEvents
	a.Domains += b.Domains
	a.TablePages += b.TablePages
	a.MappedPages += b.MappedPages
	a.Pending += b.Pending
	a.IOVAInUse += b.IOVAInUse
	return a
}
