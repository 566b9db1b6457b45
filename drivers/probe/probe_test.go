package probe

import (
	"errors"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

var (
	addr0 = pci.Addr{Dev: 2}
	addr1 = pci.Addr{Dev: 3}
	addr2 = pci.Addr{Dev: 0x19} // where PCH LAN sits when it is function 0
)

func platform(t *testing.T, m *sim.Machine, unit *iommu.Unit) Platform {
	return Platform{
		Config: m.Bus,
		BAR:    func(f *pci.Function, bar int) (kernel.Regs, error) { return m.Bus.Regs(f.Addr, bar) },
		IOMMU:  unit,
		Memory: m.Mem,
		Clock:  m.Clock,
		IRQ:    func(f *pci.Function) kernel.Waiter { return m.IRQ(f.Addr) },
		Logf:   t.Logf,
	}
}

func machine(t *testing.T) (*sim.Machine, []*m82574.NIC) {
	t.Helper()
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()})
	var models []*m82574.NIC
	for i, a := range []pci.Addr{addr2, addr0, addr1} {
		opt := m82574.Options{MAC: [6]byte{0x02, 0, 0, 0, 0, byte(i + 1)}}
		if a == addr2 {
			opt.Personality = m82574.I219LM
		}
		n, err := m82574.Plug(m, a, opt)
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, n)
	}
	return m, models
}

func command(t *testing.T, m *sim.Machine, a pci.Addr) uint32 {
	t.Helper()
	v, err := m.Bus.ReadConfig(a, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBindNamesInBusOrderWithOwnDomains(t *testing.T) {
	m, _ := machine(t)
	unit, err := iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Bind(platform(t, m, unit))
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	nics := res.NICs()
	if len(nics) != 3 {
		t.Fatalf("%d NICs", len(nics))
	}
	want := []struct {
		name string
		addr pci.Addr
		last byte
	}{{"ether0", addr0, 2}, {"ether1", addr1, 3}, {"ether2", addr2, 1}}
	for i, w := range want {
		b := res.Bound[i]
		if b.Func.Addr != w.addr || b.NIC.Name() != w.name || b.NIC.MAC()[5] != w.last || b.Driver != "e1000e" {
			t.Errorf("bound %d: %v %s mac %x driver %s, want %v %s", i, b.Func.Addr, b.NIC.Name(), b.NIC.MAC(), b.Driver, w.addr, w.name)
		}
		if c := command(t, m, w.addr); c&(pci.CmdBusMaster|pci.CmdMemory) != pci.CmdBusMaster|pci.CmdMemory {
			t.Errorf("%v: COMMAND %#x", w.addr, c)
		}
		if _, ok := b.DMA.(*iommu.Domain); !ok {
			t.Errorf("%v: DMA %T is not an IOMMU domain", w.addr, b.DMA)
		}
	}
	if !unit.Enabled() || unit.Stats().Domains != 3 {
		t.Errorf("iommu enabled %v, %d domains", unit.Enabled(), unit.Stats().Domains)
	}
	for _, n := range nics {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if f := unit.Faults(); len(f) != 0 {
		t.Errorf("faults: %v", f)
	}
}

func TestBindPassthrough(t *testing.T) {
	m, _ := machine(t)
	res, err := Bind(platform(t, m, nil))
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if len(res.NICs()) != 3 {
		t.Fatalf("%d NICs", len(res.NICs()))
	}
	for _, b := range res.Bound {
		if _, ok := b.DMA.(*iommu.Domain); ok {
			t.Errorf("%v: translated DMA with no IOMMU", b.Func.Addr)
		}
		b.NIC.Close()
	}
}

func TestBindFailingProbeLeavesBusMasterOff(t *testing.T) {
	m, _ := machine(t)
	failing := errors.New("refused by test driver")
	drivers := []Driver{
		{Name: "broken", IDs: []pci.ID{{Vendor: 0x8086, Device: 0x10d3}}, Probe: func(*nic.Device) (nic.NIC, error) { return nil, failing }},
	}
	drivers = append(drivers, Driver{Name: "e1000e", IDs: []pci.ID{{Vendor: 0x8086, Device: 0x156f}}, Probe: Drivers()[0].Probe})
	p := platform(t, m, nil)
	p.Drivers = drivers
	res, err := Bind(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Bound) != 3 || !errors.Is(res.Err(), failing) {
		t.Fatalf("bound %d, err %v", len(res.Bound), res.Err())
	}
	for _, a := range []pci.Addr{addr0, addr1} {
		if c := command(t, m, a); c&pci.CmdBusMaster != 0 {
			t.Errorf("%v: bus master left on after a failed probe", a)
		}
	}
	nics := res.NICs()
	if len(nics) != 1 || nics[0].Name() != "ether0" {
		t.Fatalf("NICs %v: the one that probed should be ether0", nics)
	}
	nics[0].Close()
}

func TestBindRejectsBadSetup(t *testing.T) {
	m, _ := machine(t)
	if _, err := Bind(Platform{}); err == nil {
		t.Error("empty platform accepted")
	}
	p := platform(t, m, nil)
	p.Drivers = []Driver{{Name: "a", IDs: []pci.ID{{Vendor: 0x8086, Device: 0x10d3}}}}
	if _, err := Bind(p); err == nil || !strings.Contains(err.Error(), "no probe") {
		t.Errorf("driver without probe: %v", err)
	}
	p.Drivers = []Driver{
		{Name: "a", IDs: []pci.ID{{Vendor: 0x8086, Device: 0x10d3}}, Probe: Drivers()[0].Probe},
		{Name: "b", IDs: []pci.ID{{Vendor: 0x8086, Device: 0x10d3}}, Probe: Drivers()[0].Probe},
	}
	if _, err := Bind(p); err == nil {
		t.Error("two drivers claiming one id accepted")
	}
}

// On a machine with a VT-d unit for a root port's hierarchy, one for a
// graphics device and the catch-all, IOMMUFor gives each NIC its domain on
// the unit whose scope holds it; the graphics unit, which covers no NIC,
// is never asked for and stays off.
func TestBindPicksUnitPerFunction(t *testing.T) {
	const gfxBase, portBase = 0xfed80000, 0xfed91000
	rootPort, behind := pci.Addr{Dev: 0x1c}, pci.Addr{Bus: 1}
	m, err := sim.New(sim.Config{VTd: vtd.QEMU(), Scoped: []sim.ScopedVTd{
		{Base: gfxBase, VTd: vtd.QEMU(), Endpoints: []pci.Addr{{Dev: 2}}},
		{Base: portBase, VTd: vtd.QEMU(), Bridges: []pci.Addr{rootPort}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.Add(rootPort, sim.NewBridge(0x8086, 0xa110, 0, 1, 1)); err != nil {
		t.Fatal(err)
	}
	for i, a := range []pci.Addr{addr1, behind} {
		if _, err := m82574.Plug(m, a, m82574.Options{MAC: [6]byte{2, 0, 0, 0, 0, byte(i + 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	dmar, err := acpi.ParseDMAR(m.DMAR())
	if err != nil {
		t.Fatal(err)
	}
	scopes, _ := dmar.ScopeMap(func(seg uint16, bus, dev, fn uint8, off, size int) (uint32, error) {
		return m.Bus.ReadConfig(pci.Addr{Seg: seg, Bus: bus, Dev: dev, Fn: fn}, off, size)
	})
	units := map[uint64]*iommu.Unit{}
	asked := map[uint64]int{}
	p := platform(t, m, nil)
	p.IOMMUFor = func(f *pci.Function) (*iommu.Unit, error) {
		c, ok := scopes.UnitFor(f.Addr.Seg, f.Addr.Bus, f.Addr.Dev, f.Addr.Fn)
		if !ok {
			return nil, nil
		}
		asked[c.Unit.Base]++
		if u := units[c.Unit.Base]; u != nil {
			return u, nil
		}
		regs, err := m.UnitRegs(c.Unit.Base)
		if err != nil {
			return nil, err
		}
		u, err := iommu.New(regs, m.Mem, iommu.Options{Clock: m.Clock})
		units[c.Unit.Base] = u
		return u, err
	}
	res, err := Bind(p)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if len(res.Bound) != 2 || asked[portBase] != 1 || asked[sim.VTdBase] != 1 || asked[gfxBase] != 0 {
		t.Fatalf("bound %d, units asked %v", len(res.Bound), asked)
	}
	for _, b := range res.Bound {
		want := map[pci.Addr]uint64{addr1: sim.VTdBase, behind: portBase}[b.Func.Addr]
		u := units[want]
		dom, ok := b.DMA.(*iommu.Domain)
		if !ok || u == nil || !u.Enabled() || u.Stats().Domains != 1 {
			t.Fatalf("%v: DMA %T, unit %#x %v", b.Func.Addr, b.DMA, want, u)
		}
		if d, err := u.Domain(iommu.SourceID(b.Func.Addr.Bus, b.Func.Addr.Dev, b.Func.Addr.Fn)); err != nil || d != dom {
			t.Errorf("%v: its domain is not on unit %#x", b.Func.Addr, want)
		}
		b.NIC.Close()
	}
	for _, r := range m.Units() {
		on := r.Unit.Read32(vtd.GSTS)&vtd.GSTS_TES != 0
		if on != (r.Base != gfxBase) {
			t.Errorf("unit %#x: translation on %v", r.Base, on)
		}
	}
}

// An IOMMUFor error fails that function alone, with bus mastering off.
func TestBindIOMMUForError(t *testing.T) {
	m, _ := machine(t)
	unit, err := iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	p := platform(t, m, nil)
	bad := errors.New("unit registers unreachable")
	p.IOMMUFor = func(f *pci.Function) (*iommu.Unit, error) {
		switch f.Addr {
		case addr1:
			return nil, bad
		case addr2:
			return nil, nil
		}
		return unit, nil
	}
	res, err := Bind(p)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Err(), bad) || !strings.Contains(res.Err().Error(), "00:03.0: iommu: unit registers unreachable") {
		t.Fatalf("err %v", res.Err())
	}
	if c := command(t, m, addr1); c&pci.CmdBusMaster != 0 {
		t.Error("bus master on for the function whose unit failed")
	}
	for _, b := range res.Bound {
		if b.NIC == nil {
			continue
		}
		_, translated := b.DMA.(*iommu.Domain)
		if translated != (b.Func.Addr == addr0) {
			t.Errorf("%v: translated %v", b.Func.Addr, translated)
		}
		b.NIC.Close()
	}
}
