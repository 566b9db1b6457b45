package system_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// remapMachine is the scoped machine of units_test.go with plain devices
// where the NICs sit: a Remapper needs functions, not drivers. mapped
// counts the register windows the platform was asked for.
func remapMachine(t *testing.T) (*sim.Machine, system.Platform, map[uint64]int) {
	t.Helper()
	cfg := vtd.QEMU()
	m, err := sim.New(sim.Config{VTd: cfg, Scoped: []sim.ScopedVTd{
		{Base: gfxBase, VTd: cfg, Endpoints: []pci.Addr{gfxAddr}},
		{Base: portBase, VTd: cfg, Bridges: []pci.Addr{rootPort}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for a, d := range map[pci.Addr]sim.Device{
		gfxAddr:    newDisplay(),
		rootPort:   sim.NewBridge(0x8086, 0xa110, 0, 1, 2),
		switchPort: sim.NewBridge(0x8086, 0x1578, 1, 2, 2),
		nearNIC:    newDisplay(),
		farNIC:     newDisplay(),
	} {
		if err := m.Bus.Add(a, d); err != nil {
			t.Fatal(err)
		}
	}
	mapped := map[uint64]int{}
	plat := simmachine.Platform(m)
	plat.MapUnit = func(base uint64) (kernel.Regs, error) {
		mapped[base]++
		return m.UnitRegs(base)
	}
	return m, plat, mapped
}

// Each function gets the unit whose scope holds it, brought up once on
// first use; a unit nobody asked for is neither mapped nor reported up.
func TestRemapperUnitFor(t *testing.T) {
	m, plat, mapped := remapMachine(t)
	con := &lines{}
	rm := system.NewRemapper(plat, "deferred", con.logf)
	if us := rm.Units(); len(us) != 0 || len(mapped) != 0 {
		t.Fatalf("units %+v and windows %v before any function asked", us, mapped)
	}
	for _, tc := range []struct {
		a    pci.Addr
		base uint64
	}{
		{farNIC, portBase},
		{nearNIC, sim.VTdBase},
		{farNIC, portBase}, // again: the same unit, not brought up twice
	} {
		u, err := rm.UnitFor(&pci.Function{Addr: tc.a})
		if err != nil || u == nil {
			t.Fatalf("UnitFor(%v): %v, %v", tc.a, u, err)
		}
		if base, ok := rm.UnitOf(tc.a); !ok || base != tc.base {
			t.Errorf("UnitOf(%v) = %#x, %v; want %#x", tc.a, base, ok, tc.base)
		}
		if mode, _ := u.Mode(); mode.String() != "deferred" || !u.Enabled() {
			t.Errorf("unit of %v: mode %v, enabled %v", tc.a, mode, u.Enabled())
		}
	}
	if _, ok := rm.UnitOf(gfxAddr); ok {
		t.Error("UnitOf names a unit for a function never bound")
	}
	if mapped[portBase] != 1 || mapped[sim.VTdBase] != 1 || mapped[gfxBase] != 0 {
		t.Errorf("register windows mapped %v", mapped)
	}
	us := rm.Units()
	if len(us) != 2 || us[0].Base != portBase || us[1].Base != sim.VTdBase || us[0].Unit == us[1].Unit {
		t.Fatalf("units %+v, want the root port's then the catch-all", us)
	}
	rm.ReportIdle()
	out := con.String()
	for want, n := range map[string]int{
		"iommu: translation on, 4-level\n":                                         1,
		"iommu: unit 0xfed91000 bridge 00:1c.0 buses 01-02: ":                      1,
		"iommu: unit 0xfed90000 include-all: ":                                     1,
		"iommu: unit 0xfed80000 endpoint 00:02.0: covers no NIC, left untouched\n": 1,
	} {
		if got := strings.Count(out, want); got != n {
			t.Errorf("console says %q %d times, want %d:\n%s", want, got, n, out)
		}
	}
	states := map[uint64]string{}
	for _, st := range rm.Status() {
		states[st.Base] = st.State
	}
	if states[gfxBase] != "idle" || states[portBase] != "on" || states[sim.VTdBase] != "on" {
		t.Errorf("unit states %v", states)
	}

	if err := rm.Disable(); err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Units() {
		if r.Unit.Read32(vtd.GSTS)&vtd.GSTS_TES != 0 {
			t.Errorf("unit %#x still translating after Disable", r.Base)
		}
	}
}

// faultingRemapper brings up the units of both NICs' places, each with an
// empty domain and bus mastering on, so that every DMA they make faults.
func faultingRemapper(t *testing.T) (*sim.Machine, *system.Remapper, *lines) {
	t.Helper()
	m, plat, _ := remapMachine(t)
	con := &lines{}
	rm := system.NewRemapper(plat, "strict", con.logf)
	for _, a := range []pci.Addr{nearNIC, farNIC} {
		u, err := rm.UnitFor(&pci.Function{Addr: a})
		if err != nil || u == nil {
			t.Fatalf("UnitFor(%v): %v, %v", a, u, err)
		}
		if _, err := u.Domain(uint16(a.Bus)<<8 | uint16(a.Dev)<<3 | uint16(a.Fn)); err != nil {
			t.Fatal(err)
		}
		if err := m.Bus.WriteConfig(a, 4, 2, 0x6); err != nil { // memory space, bus master
			t.Fatal(err)
		}
	}
	return m, rm, con
}

// ReportFaults prints each fault once, however often it is called, and
// counts every unit's.
func TestRemapperReportFaults(t *testing.T) {
	m, rm, con := faultingRemapper(t)
	if n := rm.ReportFaults(); n != 0 || strings.Contains(con.String(), "fault") {
		t.Fatalf("%d faults before any DMA:\n%s", n, con)
	}
	// Nothing is mapped in either domain: every read faults. QEMU's unit
	// has one fault recording register, so the faults are polled for
	// between reads, as the fault service does.
	for i, a := range []pci.Addr{nearNIC, farNIC, farNIC} {
		if err := m.Port(a).Read(0x10000, make([]byte, 64)); err == nil {
			t.Fatalf("DMA read of %v through an empty domain succeeded", a)
		}
		for range 2 {
			if n := rm.ReportFaults(); n != uint64(i+1) {
				t.Errorf("after fault %d ReportFaults counts %d", i+1, n)
			}
		}
	}
	out := con.String()
	for want, n := range map[string]int{"iommu: fault ": 3, "iommu: fault 00:03.0 read 0x10000": 1, "iommu: fault 02:00.0 read 0x10000": 2} {
		if got := strings.Count(out, want); got != n {
			t.Errorf("console says %q %d times, want %d:\n%s", want, got, n, out)
		}
	}
	states := map[uint64]uint64{}
	for _, st := range rm.Status() {
		states[st.Base] = st.Faults
	}
	if states[sim.VTdBase] != 1 || states[portBase] != 2 {
		t.Errorf("faults by unit %v", states)
	}
}

// Where translation is off, or the table names no unit that can be
// brought up, functions get untranslated DMA and the console says why.
func TestRemapperUntranslated(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  string
		plat  func(system.Platform) system.Platform
		say   string
		units int
	}{
		{"off", "off", nil, "iommu: off (ether9.iommu=off)\n", 0},
		{"bad mode", "sloppy", nil, "; DMA untranslated\n", 0},
		{"no table", "strict", func(p system.Platform) system.Platform { p.DMAR = nil; return p }, "iommu: none (no DMAR table)\n", 0},
		{"bad table", "strict", func(p system.Platform) system.Platform { p.DMAR = p.DMAR[:20]; return p }, "; DMA untranslated\n", 0},
		{"window refused", "strict", func(p system.Platform) system.Platform {
			p.MapUnit = func(base uint64) (kernel.Regs, error) { return nil, errors.New("window refused") }
			return p
		}, "iommu: unit 0xfed90000: window refused; DMA of 00:03.0 untranslated\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, plat, mapped := remapMachine(t)
			if tc.plat != nil {
				plat = tc.plat(plat)
			}
			con := &lines{}
			rm := system.NewRemapper(plat, tc.mode, con.logf)
			for range 2 {
				u, err := rm.UnitFor(&pci.Function{Addr: nearNIC})
				if u != nil || err != nil {
					t.Fatalf("UnitFor: a unit (%v) or an error (%v); want untranslated", u != nil, err)
				}
			}
			if _, ok := rm.UnitOf(nearNIC); ok || len(rm.Units()) != 0 || len(mapped) != 0 {
				t.Errorf("units %+v, windows %v", rm.Units(), mapped)
			}
			if got := strings.Count(con.String(), tc.say); got < 1 {
				t.Errorf("console does not say %q:\n%s", tc.say, con)
			}
		})
	}
	var none *system.Remapper
	if u, err := none.UnitFor(&pci.Function{Addr: nearNIC}); u != nil || err != nil || none.Units() != nil || none.ReportFaults() != 0 || none.Disable() != nil {
		t.Error("a nil Remapper translates")
	}
}

// A requester that faults at every DMA gets a few lines on the console
// and then a count once its window ends, so it cannot flood a serial
// console; another requester's faults are still shown, and every fault
// is still counted.
func TestFaultFloodSummed(t *testing.T) {
	m, rm, con := faultingRemapper(t)
	const flood = 40
	for range flood {
		if err := m.Port(farNIC).Read(0x10000, make([]byte, 64)); err == nil {
			t.Fatal("DMA through an empty domain succeeded")
		}
		rm.ReportFaults() // one fault recording register: report between faults
	}
	if err := m.Port(nearNIC).Read(0x20000, make([]byte, 64)); err == nil {
		t.Fatal("DMA through an empty domain succeeded")
	}
	if n := rm.ReportFaults(); n != flood+1 {
		t.Errorf("ReportFaults counts %d, want %d", n, flood+1)
	}
	out := con.String()
	if got := strings.Count(out, "iommu: fault 02:00.0 read 0x10000"); got != 5 {
		t.Errorf("the flooding requester has %d fault lines, want 5:\n%s", got, out)
	}
	if !strings.Contains(out, "iommu: fault 00:03.0 read 0x20000") {
		t.Errorf("the other requester's fault is not shown:\n%s", out)
	}
	if strings.Contains(out, "more faults") {
		t.Errorf("a count before the window ended:\n%s", out)
	}
	m.Clock.Advance(11 * time.Second)
	rm.ReportFaults()
	if want := fmt.Sprintf("iommu: %d more faults from 02:00.0 on unit %#x in 11s, not shown", flood-5, uint64(portBase)); !strings.Contains(con.String(), want) {
		t.Errorf("no count of the faults held back, want %q:\n%s", want, con)
	}
}

// A reserved memory region the DMAR names for a function is mapped one to
// one in that function's domain when its unit comes up, before
// translation is on, so firmware's DMA there goes on; the function's
// other addresses, and every other function's, still fault.
func TestReservedRegionMapped(t *testing.T) {
	usb := pci.Addr{Dev: 0x14}
	const base, limit = 0x7f000000, 0x7f001fff
	m, err := sim.New(sim.Config{VTd: vtd.QEMU(), Reserved: []sim.Reserved{{Base: base, Limit: limit, Endpoints: []pci.Addr{usb}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []pci.Addr{usb, nearNIC} {
		if err := m.Bus.Add(a, newDisplay()); err != nil {
			t.Fatal(err)
		}
	}
	con := &lines{}
	rm := system.NewRemapper(simmachine.Platform(m), "strict", con.logf)
	if u, err := rm.UnitFor(&pci.Function{Addr: nearNIC}); err != nil || u == nil {
		t.Fatalf("UnitFor(%v): %v, %v", nearNIC, u, err)
	}
	if want := "reserved region 0x7f000000-0x7f001fff mapped one to one for 00:14.0"; !strings.Contains(con.String(), want) {
		t.Errorf("the console does not say %q:\n%s", want, con)
	}
	src := func(a pci.Addr) uint16 { return iommu.SourceID(a.Bus, a.Dev, a.Fn) }
	for _, a := range []uint64{base, base + 0x1234, limit &^ 0xfff} {
		if p, err := m.VTd.Translate(src(usb), a, true); err != nil || uint64(p) != a {
			t.Errorf("firmware's DMA at %#x: %#x, %v; want it to itself", a, p, err)
		}
	}
	if _, err := m.VTd.Translate(src(usb), limit+1, false); err == nil {
		t.Error("past the region translates")
	}
	if _, err := m.VTd.Translate(src(nearNIC), base, false); err == nil {
		t.Error("another function reaches the region")
	}
}
