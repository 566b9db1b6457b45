package sim

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// A server-like machine: a graphics unit naming 00:02.0, a unit for the
// root port 00:1c.0 and everything below it (a switch port 01:00.0 leading
// to bus 2), and the catch-all.
const (
	gfxBase  = 0xfed80000
	portBase = 0xfed91000
)

var (
	rootPort = pci.Addr{Bus: 0, Dev: 0x1c}
	switchUp = pci.Addr{Bus: 1, Dev: 0}
	behind   = pci.Addr{Bus: 2, Dev: 0}
	onBus0   = pci.Addr{Bus: 0, Dev: 3}
)

func scopedMachine(t *testing.T) *Machine {
	t.Helper()
	cfg := vtd.QEMU()
	cfg.InvalidationCost = -1
	m, err := New(Config{VTd: cfg, Scoped: []ScopedVTd{
		{Base: gfxBase, VTd: cfg, Endpoints: []pci.Addr{{Bus: 0, Dev: 2}}},
		{Base: portBase, VTd: cfg, Bridges: []pci.Addr{rootPort}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for a, b := range map[pci.Addr]*Bridge{rootPort: NewBridge(0x8086, 0xa110, 0, 1, 2), switchUp: NewBridge(0x8086, 0xa111, 1, 2, 2)} {
		if err := m.Bus.Add(a, b); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestScopedDMARWalksBack(t *testing.T) {
	m := scopedMachine(t)
	addBusMaster(t, m, behind)
	addBusMaster(t, m, onBus0)
	d, err := acpi.ParseDMAR(m.DMAR())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Units) != 3 || d.Units[0].Base != gfxBase || d.Units[1].Base != portBase || d.Units[2].Base != VTdBase || !d.Units[2].IncludeAll() {
		t.Fatalf("units %+v, want graphics, root port, catch-all last", d.Units)
	}
	if s := d.Units[1].Scopes; len(s) != 1 || s[0].Type != acpi.ScopePCIBridge || s[0].StartBus != 0 || len(s[0].Path) != 1 || s[0].Path[0] != (acpi.PathEntry{Dev: 0x1c}) {
		t.Fatalf("root port unit's scope %+v", s)
	}
	read := func(seg uint16, bus, dev, fn uint8, off, size int) (uint32, error) {
		return m.Bus.ReadConfig(pci.Addr{Seg: seg, Bus: bus, Dev: dev, Fn: fn}, off, size)
	}
	// The graphics device is not there: its unit keeps the address, for
	// a function that appears later, and the walk reports nothing.
	sm, err := d.ScopeMap(read)
	if err != nil {
		t.Fatalf("scope map: %v", err)
	}
	gfx := pci.Addr{Bus: 0, Dev: 2}
	for a, base := range map[pci.Addr]uint64{behind: portBase, switchUp: portBase, rootPort: portBase, onBus0: VTdBase, gfx: gfxBase} {
		if c, ok := sm.UnitFor(0, a.Bus, a.Dev, a.Fn); !ok || c.Unit.Base != base {
			t.Errorf("UnitFor(%v) = %#x %v, want %#x", a, c.Unit.Base, ok, base)
		}
	}
}

// An endpoint deep in the hierarchy is written as a path through every
// bridge above it, which the driver's walk resolves back to it.
func TestScopedEndpointPath(t *testing.T) {
	cfg := vtd.QEMU()
	m, err := New(Config{VTd: cfg, Scoped: []ScopedVTd{{Base: portBase, VTd: cfg, Endpoints: []pci.Addr{behind}}}})
	if err != nil {
		t.Fatal(err)
	}
	for a, b := range map[pci.Addr]*Bridge{rootPort: NewBridge(0x8086, 0xa110, 0, 1, 2), switchUp: NewBridge(0x8086, 0xa111, 1, 2, 2)} {
		if err := m.Bus.Add(a, b); err != nil {
			t.Fatal(err)
		}
	}
	addBusMaster(t, m, behind)
	d, err := acpi.ParseDMAR(m.DMAR())
	if err != nil {
		t.Fatal(err)
	}
	s := d.Units[0].Scopes[0]
	want := []acpi.PathEntry{{Dev: 0x1c}, {Dev: 0}, {Dev: 0}}
	if s.Type != acpi.ScopePCIEndpoint || s.StartBus != 0 || len(s.Path) != 3 || s.Path[0] != want[0] || s.Path[1] != want[1] || s.Path[2] != want[2] {
		t.Fatalf("scope %+v, want endpoint path %v", s, want)
	}
	c, err := d.Units[0].Resolve(func(seg uint16, bus, dev, fn uint8, off, size int) (uint32, error) {
		return m.Bus.ReadConfig(pci.Addr{Seg: seg, Bus: bus, Dev: dev, Fn: fn}, off, size)
	})
	if err != nil || len(c.Reach) != 1 || c.Reach[0].Func != (acpi.Func{Bus: 2}) {
		t.Fatalf("resolved %+v, %v", c.Reach, err)
	}
}

// Requests go to the unit whose scope holds the requester: with only the
// root port's unit translating, the function behind it is translated (and
// faults there on an unmapped page) while the one on bus 0 passes the
// catch-all untranslated, and the graphics unit sees nothing.
func TestScopedUnitTranslatesItsRequesters(t *testing.T) {
	m := scopedMachine(t)
	far := addBusMaster(t, m, behind)
	near := addBusMaster(t, m, onBus0)
	units := m.Units()
	if len(units) != 3 || units[0].Base != gfxBase || units[1].Base != portBase || units[2].Base != VTdBase || units[2].Unit != m.VTd {
		t.Fatalf("units %+v", units)
	}
	port := units[1].Unit

	buf, err := m.Mem.Alloc(kernel.PageSize, kernel.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostTables{t: t, m: m}
	const iova = 0x40000
	h.mapPage(far.Source(), 1, iova, buf.Phys, 3)
	h.flushAll()
	regs, err := m.UnitRegs(portBase)
	if err != nil {
		t.Fatal(err)
	}
	enableVTd(t, regs, h.root.Phys)

	if err := far.Write(iova+8, []byte("scoped")); err != nil {
		t.Fatal(err)
	}
	if got := string(buf.Buf[8:14]); got != "scoped" {
		t.Fatalf("translated write landed as %q", got)
	}
	var f *vtd.Fault
	if err := far.Write(iova+kernel.PageSize, []byte("x")); !errors.As(err, &f) || f.Source != far.Source() {
		t.Fatalf("write to an unmapped page: %v", err)
	}
	if err := near.Write(uint64(buf.Phys)+100, []byte("plain")); err != nil {
		t.Fatal(err)
	}
	if got := string(buf.Buf[100:105]); got != "plain" {
		t.Fatalf("untranslated write landed as %q", got)
	}
	if st := port.Stats(); st.Faults != 1 || st.Untranslated != 0 {
		t.Errorf("root port unit: %d faults, %d untranslated; want 1, 0", st.Faults, st.Untranslated)
	}
	if st := m.VTd.Stats(); st.Faults != 0 || st.Untranslated != 1 {
		t.Errorf("catch-all: %d faults, %d untranslated; want 0, 1", st.Faults, st.Untranslated)
	}
	if st := units[0].Unit.Stats(); st.Untranslated != 0 || st.Faults != 0 {
		t.Errorf("graphics unit saw requests: %+v", st)
	}
	if _, err := m.UnitRegs(0xfed95000); err == nil {
		t.Error("UnitRegs found a unit at an address with none")
	}
}

func TestScopedBadBase(t *testing.T) {
	for _, base := range []uint64{0, VTdBase, portBase + 8} {
		_, err := New(Config{VTd: vtd.QEMU(), Scoped: []ScopedVTd{{Base: base, VTd: vtd.QEMU()}}})
		if err == nil || !strings.Contains(err.Error(), "not a free page") {
			t.Errorf("base %#x: err %v", base, err)
		}
	}
	_, err := New(Config{VTd: vtd.QEMU(), Scoped: []ScopedVTd{{Base: portBase, VTd: vtd.QEMU()}, {Base: portBase, VTd: vtd.QEMU()}}})
	if err == nil {
		t.Error("two units at one base accepted")
	}
	_, err = New(Config{VTd: vtd.QEMU(), Scoped: []ScopedVTd{{Base: portBase, VTd: vtd.Config{AddrWidth: 40}}}})
	if err == nil || !strings.Contains(err.Error(), "scoped VT-d unit 0") {
		t.Errorf("bad unit config: err %v", err)
	}
}

// randomTopology plugs a random hierarchy of bridges and endpoints in,
// numbering buses depth first as firmware does, and returns the bridges
// and endpoints.
func randomTopology(t *testing.T, m *Machine, r *rand.Rand) (bridges, endpoints []pci.Addr) {
	next := uint8(1)
	var build func(bus uint8, depth int)
	build = func(bus uint8, depth int) {
		for dev := range uint8(32) {
			if r.IntN(6) != 0 {
				continue
			}
			a := pci.Addr{Bus: bus, Dev: dev}
			if depth < 3 && next < 250 && r.IntN(2) == 0 {
				sec := next
				next++
				build(sec, depth+1)
				if err := m.Bus.Add(a, NewBridge(0x8086, 0xa110, bus, sec, next-1)); err != nil {
					t.Fatal(err)
				}
				bridges = append(bridges, a)
				continue
			}
			if err := m.Bus.Add(a, newDMAModel()); err != nil {
				t.Fatal(err)
			}
			endpoints = append(endpoints, a)
		}
	}
	build(0, 0)
	return bridges, endpoints
}

// The firmware side (the DMAR paths the machine writes) and the driver
// side (the walk in package acpi) agree with the machine's routing of
// requests on every function of random hierarchies, overlapping scopes
// included.
func TestScopedRoutingMatchesDMARWalk(t *testing.T) {
	var deep int // functions a scoped unit reaches through a bridge
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 9))
		probe, err := New(Config{VTd: vtd.QEMU()})
		if err != nil {
			t.Fatal(err)
		}
		bridges, endpoints := randomTopology(t, probe, r)
		pick := func(from []pci.Addr) []pci.Addr {
			var out []pci.Addr
			for _, a := range from {
				if r.IntN(4) == 0 {
					out = append(out, a)
				}
			}
			return out
		}
		var scoped []ScopedVTd
		for i := range 1 + r.IntN(3) {
			scoped = append(scoped, ScopedVTd{Base: 0xfed00000 + uint64(i)<<12, VTd: vtd.QEMU(), Bridges: pick(bridges), Endpoints: pick(endpoints)})
		}
		// The same hierarchy again, now with the units.
		m, err := New(Config{VTd: vtd.QEMU(), Scoped: scoped})
		if err != nil {
			t.Fatal(err)
		}
		randomTopology(t, m, rand.New(rand.NewPCG(seed, 9)))

		d, err := acpi.ParseDMAR(m.DMAR())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		sm, err := d.ScopeMap(func(seg uint16, bus, dev, fn uint8, off, size int) (uint32, error) {
			return m.Bus.ReadConfig(pci.Addr{Seg: seg, Bus: bus, Dev: dev, Fn: fn}, off, size)
		})
		if err != nil {
			t.Fatalf("seed %d: scope walk: %v", seed, err)
		}
		base := map[*vtd.Unit]uint64{}
		for _, u := range m.Units() {
			base[u.Unit] = u.Base
		}
		for _, a := range m.Bus.Functions() {
			c, ok := sm.UnitFor(a.Seg, a.Bus, a.Dev, a.Fn)
			if want := base[m.unitFor(a)]; !ok || c.Unit.Base != want {
				t.Fatalf("seed %d: %v: the DMAR walk gives unit %#x, the machine routes to %#x", seed, a, c.Unit.Base, want)
			}
			if a.Bus > 0 && !c.Unit.IncludeAll() {
				deep++
			}
		}
	}
	if deep < 40 {
		t.Fatalf("only %d functions behind bridges went to scoped units: the hierarchies test little", deep)
	}
}
