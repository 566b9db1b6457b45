package acpi

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
)

// topo is a segment's configuration space as a scope walk sees it: the
// functions present, each with its header type and, for bridges, its bus
// numbers.
type topo map[Func]fn

type fn struct {
	header           uint8
	sec, sub         uint8
	failAt           int // config offset whose read fails, 0 for none
	multifunctionBit bool
}

func (t topo) read(seg uint16, bus, dev, f uint8, off, size int) (uint32, error) {
	if seg != 0 {
		return 1<<(8*size) - 1, nil
	}
	x, ok := t[Func{bus, dev, f}]
	if !ok {
		return 1<<(8*size) - 1, nil
	}
	if x.failAt != 0 && x.failAt == off {
		return 0, errors.New("config cycle aborted")
	}
	switch off {
	case cfgVendorID:
		return 0x8086, nil
	case cfgHeaderType:
		h := uint32(x.header)
		if x.multifunctionBit {
			h |= 0x80
		}
		return h, nil
	case cfgPrimaryBus:
		return uint32(bus) | uint32(x.sec)<<8 | uint32(x.sub)<<16, nil
	}
	return 0, nil
}

// serverTopo: a root port 00:1c.0 with a switch below it (01:00.0, whose
// downstream port 02:01.0 leads to bus 3), a second root port 00:1d.0 to
// bus 4, and endpoints on every bus.
func serverTopo() topo {
	return topo{
		{0, 2, 0}:    {header: headerNormal},                                        // integrated graphics
		{0, 0x1c, 0}: {header: headerBridge, sec: 1, sub: 3},                        // root port
		{1, 0, 0}:    {header: headerBridge, sec: 2, sub: 3},                        // switch upstream port
		{2, 1, 0}:    {header: headerBridge, sec: 3, sub: 3},                        // switch downstream port
		{3, 0, 0}:    {header: headerNormal, multifunctionBit: true},                // NIC port 0
		{3, 0, 1}:    {header: headerNormal},                                        // NIC port 1
		{0, 0x1d, 0}: {header: headerBridge, sec: 4, sub: 4},                        // second root port
		{4, 0, 0}:    {header: headerNormal},                                        // NIC on it
		{0, 0x1f, 0}: {header: headerNormal},                                        // LPC
		{0, 0x1e, 0}: {header: headerCardBus, sec: 5, sub: 5},                       // CardBus bridge
		{0, 0x1b, 0}: {header: headerBridge, sec: 0, sub: 0},                        // unassigned
		{0, 0x1a, 0}: {header: headerBridge, sec: 7, sub: 6},                        // subordinate below secondary
		{0, 0x19, 0}: {header: headerBridge, sec: 8, sub: 8, failAt: cfgPrimaryBus}, // bus numbers unreadable
	}
}

func p(dev, fn uint8) PathEntry { return PathEntry{dev, fn} }

func TestResolveScope(t *testing.T) {
	tp := serverTopo()
	cases := []struct {
		name  string
		scope DeviceScope
		want  Reach
		err   string
	}{
		{"endpoint on the start bus", DeviceScope{Type: ScopePCIEndpoint, Path: []PathEntry{p(2, 0)}},
			Reach{Type: ScopePCIEndpoint, Func: Func{0, 2, 0}}, ""},
		{"endpoint behind three bridges", DeviceScope{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1c, 0), p(0, 0), p(1, 0), p(0, 1)}},
			Reach{Type: ScopePCIEndpoint, Func: Func{3, 0, 1}}, ""},
		{"root port sub-hierarchy", DeviceScope{Type: ScopePCIBridge, Path: []PathEntry{p(0x1c, 0)}},
			Reach{Type: ScopePCIBridge, Func: Func{0, 0x1c, 0}, Secondary: 1, Subordinate: 3}, ""},
		{"switch port sub-hierarchy", DeviceScope{Type: ScopePCIBridge, Path: []PathEntry{p(0x1c, 0), p(0, 0), p(1, 0)}},
			Reach{Type: ScopePCIBridge, Func: Func{2, 1, 0}, Secondary: 3, Subordinate: 3}, ""},
		{"start bus other than 0", DeviceScope{Type: ScopePCIBridge, StartBus: 1, Path: []PathEntry{p(0, 0)}},
			Reach{Type: ScopePCIBridge, Func: Func{1, 0, 0}, Secondary: 2, Subordinate: 3}, ""},
		{"cardbus bridge", DeviceScope{Type: ScopePCIBridge, Path: []PathEntry{p(0x1e, 0)}},
			Reach{Type: ScopePCIBridge, Func: Func{0, 0x1e, 0}, Secondary: 5, Subordinate: 5}, ""},
		{"multi-function bit ignored", DeviceScope{Type: ScopePCIEndpoint, StartBus: 3, Path: []PathEntry{p(0, 0)}},
			Reach{Type: ScopePCIEndpoint, Func: Func{3, 0, 0}}, ""},

		{"empty path", DeviceScope{Type: ScopePCIEndpoint}, Reach{}, "empty path"},
		{"endpoint absent, as a VF before SR-IOV is on", DeviceScope{Type: ScopePCIEndpoint, Path: []PathEntry{p(3, 0)}},
			Reach{Type: ScopePCIEndpoint, Func: Func{0, 3, 0}}, ""},
		{"endpoint absent behind a bridge", DeviceScope{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1c, 0), p(7, 0)}},
			Reach{Type: ScopePCIEndpoint, Func: Func{1, 7, 0}}, ""},
		{"hop absent", DeviceScope{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1c, 0), p(5, 0), p(0, 0)}}, Reach{}, "01:05.0: no function there"},
		{"hop is an endpoint", DeviceScope{Type: ScopePCIEndpoint, Path: []PathEntry{p(2, 0), p(0, 0)}}, Reach{}, "00:02.0: header type 0 is no bridge"},
		{"endpoint scope names a bridge", DeviceScope{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1c, 0)}}, Reach{}, "endpoint scope names 00:1c.0"},
		{"bridge absent", DeviceScope{Type: ScopePCIBridge, Path: []PathEntry{p(0x15, 0)}}, Reach{}, "00:15.0: no function there"},
		{"bridge scope names an endpoint", DeviceScope{Type: ScopePCIBridge, Path: []PathEntry{p(0x1f, 0)}}, Reach{}, "00:1f.0: header type 0 is no bridge"},
		{"bridge unnumbered", DeviceScope{Type: ScopePCIBridge, Path: []PathEntry{p(0x1b, 0)}}, Reach{}, "not numbered below it"},
		{"hop through unnumbered bridge", DeviceScope{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1b, 0), p(0, 0)}}, Reach{}, "not numbered below it"},
		{"subordinate below secondary", DeviceScope{Type: ScopePCIBridge, Path: []PathEntry{p(0x1a, 0)}}, Reach{}, "subordinate 06"},
		{"config read fails", DeviceScope{Type: ScopePCIBridge, Path: []PathEntry{p(0x19, 0)}}, Reach{}, "bus numbers: config cycle aborted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := DRHD{Base: 0xfed91000, Scopes: []DeviceScope{c.scope}}
			cov, err := u.Resolve(tp.read)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one containing %q", err, c.err)
				}
				if !strings.Contains(err.Error(), "unit 0xfed91000 scope 0") {
					t.Errorf("error %q does not name the unit and scope", err)
				}
				if len(cov.Reach) != 0 {
					t.Errorf("a scope that failed reaches %v", cov.Reach)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cov.Reach) != 1 || cov.Reach[0] != c.want {
				t.Fatalf("reach %+v, want %+v", cov.Reach, c.want)
			}
		})
	}
}

// A failing scope loses nothing else: the unit's other scopes still
// resolve, and non-PCI scopes are passed over without error.
func TestResolveKeepsGoodScopes(t *testing.T) {
	u := DRHD{Base: 0xfed91000, Scopes: []DeviceScope{
		{Type: ScopeIOAPIC, EnumID: 8, StartBus: 0xf0, Path: []PathEntry{p(0x1f, 0)}},
		{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1c, 0)}},
		{Type: ScopePCIBridge, Path: []PathEntry{p(0x1d, 0)}},
		{Type: ScopeHPET, StartBus: 0, Path: []PathEntry{p(0x1f, 7)}},
	}}
	cov, err := u.Resolve(serverTopo().read)
	if err == nil || !strings.Contains(err.Error(), "scope 1 (endpoint bus 00 path 1c.0)") {
		t.Fatalf("err = %v, want scope 1's", err)
	}
	if strings.Contains(err.Error(), "scope 0") || strings.Contains(err.Error(), "scope 3") {
		t.Errorf("non-PCI scopes reported: %v", err)
	}
	want := Reach{Type: ScopePCIBridge, Func: Func{0, 0x1d, 0}, Secondary: 4, Subordinate: 4}
	if len(cov.Reach) != 1 || cov.Reach[0] != want {
		t.Fatalf("reach %+v, want [%+v]", cov.Reach, want)
	}
}

func TestResolveWithoutConfigSpace(t *testing.T) {
	u := DRHD{Scopes: []DeviceScope{
		{Type: ScopePCIEndpoint, Path: []PathEntry{p(2, 0)}},
		{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1c, 0), p(0, 0)}},
		{Type: ScopePCIBridge, Path: []PathEntry{p(0x1c, 0)}},
	}}
	cov, err := u.Resolve(nil)
	if err == nil || strings.Count(err.Error(), "needs configuration space") != 2 {
		t.Fatalf("err = %v, want the two scopes that need a walk", err)
	}
	if len(cov.Reach) != 1 || cov.Reach[0] != (Reach{Type: ScopePCIEndpoint, Func: Func{0, 2, 0}}) {
		t.Fatalf("reach %+v", cov.Reach)
	}
}

func TestReachCovers(t *testing.T) {
	br := Reach{Type: ScopePCIBridge, Func: Func{0, 0x1c, 0}, Secondary: 1, Subordinate: 3}
	ep := Reach{Type: ScopePCIEndpoint, Func: Func{3, 0, 1}}
	for _, c := range []struct {
		r         Reach
		bus, d, f uint8
		want      bool
	}{
		{br, 0, 0x1c, 0, true}, {br, 1, 0, 0, true}, {br, 3, 31, 7, true},
		{br, 0, 0x1c, 1, false}, {br, 0, 2, 0, false}, {br, 4, 0, 0, false},
		{ep, 3, 0, 1, true}, {ep, 3, 0, 0, false}, {ep, 0, 0, 0, false},
	} {
		if got := c.r.Covers(c.bus, c.d, c.f); got != c.want {
			t.Errorf("%v covers %02x:%02x.%x = %v, want %v", c.r, c.bus, c.d, c.f, got, c.want)
		}
	}
}

// A client board (a graphics unit and a catch-all) and a server (one unit
// per root port, plus the catch-all): each function goes to the unit whose
// scope reaches it, the rest to INCLUDE_PCI_ALL.
func TestScopeMapUnitFor(t *testing.T) {
	tbl := Build("DMAR", 1, dmarBody(46, DMARIntrRemap,
		drhd(0, 0, 0xfed90000, scope(ScopePCIEndpoint, 0, p(2, 0))),
		drhd(0, 0, 0xfed91000, scope(ScopePCIBridge, 0, p(0x1c, 0))),
		drhd(0, 0, 0xfed92000, scope(ScopePCIEndpoint, 0, p(0x1d, 0), p(0, 0))),
		drhd(DRHDIncludePCIAll, 0, 0xfed93000, scope(ScopeIOAPIC, 0xf0, p(0x1f, 0))),
		drhd(0, 1, 0xfed94000, scope(ScopePCIBridge, 0, p(0x1c, 0))),
	))
	d, err := ParseDMAR(tbl)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.ScopeMap(serverTopo().read)
	if err == nil || !strings.Contains(err.Error(), "unit 0xfed94000") {
		// Segment 1 has no functions in this topology: its scope fails.
		t.Fatalf("err = %v, want the segment 1 unit's scope reported", err)
	}
	for _, c := range []struct {
		seg       uint16
		bus, d, f uint8
		base      uint64
	}{
		{0, 0, 2, 0, 0xfed90000},
		{0, 0, 0x1c, 0, 0xfed91000},
		{0, 1, 0, 0, 0xfed91000},
		{0, 2, 1, 0, 0xfed91000},
		{0, 3, 0, 0, 0xfed91000},
		{0, 3, 0, 1, 0xfed91000},
		{0, 4, 0, 0, 0xfed92000},
		{0, 0, 0x1d, 0, 0xfed93000}, // the port itself is not in the endpoint's scope
		{0, 0, 0x1f, 0, 0xfed93000},
		{0, 0, 2, 1, 0xfed93000},
		{0, 5, 0, 0, 0xfed93000},
		{0, 0x80, 0, 0, 0xfed93000},
	} {
		got, ok := m.UnitFor(c.seg, c.bus, c.d, c.f)
		if !ok || got.Unit.Base != c.base {
			t.Errorf("UnitFor(%04x:%02x:%02x.%x) = %#x %v, want %#x", c.seg, c.bus, c.d, c.f, got.Unit.Base, ok, c.base)
		}
	}
	if got, ok := m.UnitFor(1, 3, 0, 0); ok {
		t.Errorf("segment 1, whose unit's scope did not resolve and which has no catch-all: got %#x", got.Unit.Base)
	}
	if got, ok := m.UnitFor(2, 0, 0, 0); ok {
		t.Errorf("segment 2, which no unit covers: got %#x", got.Unit.Base)
	}
	// Without configuration space only the graphics unit's single hop
	// resolves: the NICs fall to the catch-all.
	for _, c := range []struct {
		bus, d, f uint8
		base      uint64
	}{{0, 2, 0, 0xfed90000}, {3, 0, 0, 0xfed93000}, {4, 0, 0, 0xfed93000}} {
		got, ok := d.UnitFor(0, c.bus, c.d, c.f)
		if !ok || got.Base != c.base {
			t.Errorf("DMAR.UnitFor(%02x:%02x.%x) = %#x %v, want %#x", c.bus, c.d, c.f, got.Base, ok, c.base)
		}
	}
}

// Overlapping scopes break the specification; the first unit in the
// table wins, whichever scope is narrower.
func TestScopeMapOverlapFirstWins(t *testing.T) {
	d := &DMAR{Units: []DRHD{
		{Base: 0x1000, Scopes: []DeviceScope{{Type: ScopePCIBridge, Path: []PathEntry{p(0x1c, 0)}}}},
		{Base: 0x2000, Scopes: []DeviceScope{{Type: ScopePCIEndpoint, StartBus: 3, Path: []PathEntry{p(0, 0)}}}},
	}}
	m, err := d.ScopeMap(serverTopo().read)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.UnitFor(0, 3, 0, 0); !ok || got.Unit.Base != 0x1000 {
		t.Fatalf("UnitFor(03:00.0) = %#x %v, want the first unit", got.Unit.Base, ok)
	}
}

func FuzzScopeMap(f *testing.F) {
	f.Add(Build("DMAR", 1, dmarBody(48, 0,
		drhd(0, 0, 0xfed90000, scope(ScopePCIBridge, 0, p(0x1c, 0), p(0, 0))),
		drhd(DRHDIncludePCIAll, 0, 0xfed91000))), uint8(3), uint8(0), uint8(1))
	f.Add(Build("DMAR", 1, dmarBody(48, 0,
		drhd(0, 0, 0xfed90000, scope(ScopePCIEndpoint, 0, p(0x1c, 0), p(0, 0), p(1, 0), p(0, 1))))), uint8(3), uint8(0), uint8(1))
	tp := serverTopo()
	f.Fuzz(func(t *testing.T, b []byte, bus, dev, fn uint8) {
		dev, fn = dev&31, fn&7
		if len(b) >= HeaderLen {
			n := int(binary.LittleEndian.Uint32(b[4:8]))
			if n < HeaderLen || n > len(b) {
				n = len(b)
			}
			var sum byte
			for _, c := range b[:n] {
				sum += c
			}
			b[9] -= sum
		}
		d, err := ParseDMAR(b)
		if err != nil {
			return
		}
		m, _ := d.ScopeMap(tp.read)
		if len(m.Units) != len(d.Units) {
			t.Fatalf("%d units mapped of %d", len(m.Units), len(d.Units))
		}
		for _, c := range m.Units {
			for _, r := range c.Reach {
				if r.Type == ScopePCIBridge && (r.Secondary <= r.Func.Bus || r.Subordinate < r.Secondary) {
					t.Fatalf("bridge reach %+v not numbered below its bridge", r)
				}
				if _, ok := tp[r.Func]; !ok {
					t.Fatalf("reach %+v ends at a function that is not there", r)
				}
			}
		}
		got, ok := m.UnitFor(0, bus, dev, fn)
		specific := false
		for _, c := range m.Units {
			if !c.Unit.IncludeAll() && c.Covers(0, bus, dev, fn) {
				specific = true
				if !ok || got.Unit.IncludeAll() {
					t.Fatalf("%02x:%02x.%x: unit %#x's scope covers it, UnitFor gave %#x %v", bus, dev, fn, c.Unit.Base, got.Unit.Base, ok)
				}
				break
			}
		}
		if ok && !specific && !got.Unit.IncludeAll() {
			t.Fatalf("%02x:%02x.%x: UnitFor gave %#x, whose scope does not reach it", bus, dev, fn, got.Unit.Base)
		}
	})
}

// A reserved region names the endpoints that keep using it: each resolves
// through the bridges to its function; a bridge scope or a path that
// cannot be walked is reported and reaches nothing, the rest still
// resolve.
func TestRMRRDevices(t *testing.T) {
	r := RMRR{Base: 0x3e2e0000, Limit: 0x3e2fffff, Scopes: []DeviceScope{
		{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1c, 0), p(0, 0), p(1, 0), p(0, 1)}},
		{Type: ScopePCIBridge, Path: []PathEntry{p(0x1c, 0)}},
		{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1c, 0), p(5, 0), p(0, 0)}},
		{Type: ScopePCIEndpoint, Path: []PathEntry{p(0x1f, 0)}},
	}}
	got, err := r.Devices(serverTopo().read)
	if want := []Func{{3, 0, 1}, {0, 0x1f, 0}}; !slices.Equal(got, want) {
		t.Errorf("devices %v, want %v", got, want)
	}
	for _, part := range []string{"reserved region 0x3e2e0000-0x3e2fffff scope 1", "not an endpoint", "scope 2", "01:05.0: no function there"} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("error %v lacks %q", err, part)
		}
	}
}
