package pci_test

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// plain is a device model with config space only: its registers read zero.
type plain struct{ cfg *sim.ConfigSpace }

func (d plain) Config() *sim.ConfigSpace                          { return d.cfg }
func (d plain) MMIORead(bar int, off uint32, size int) uint64     { return 0 }
func (d plain) MMIOWrite(bar int, off uint32, size int, v uint64) {}

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// pcieCap is a PCI Express capability body of a v2 endpoint or port.
func pcieCap(t pci.PortType) []byte {
	b := make([]byte, 58)
	binary.LittleEndian.PutUint16(b[0:], 2|uint16(t)<<4)
	binary.LittleEndian.PutUint32(b[10:], 0x1|4<<4) // link 2.5 GT/s x4
	return b
}

// msixCap is an MSI-X capability body: n entries, table and PBA in bar.
func msixCap(n int, bar int, table, pba uint32) []byte {
	return slices.Concat(le16(uint16(n-1)), le32(table|uint32(bar)), le32(pba|uint32(bar)))
}

type simTopo struct {
	m      *sim.Machine
	nic    *sim.ConfigSpace // 01:00.0, behind the root port
	igb    *sim.ConfigSpace // 00:02.0, multi-function
	msix   map[pci.Addr]int // offset of each function's MSI-X capability
	pcie   map[pci.Addr]int
	aer    map[pci.Addr]int
	cmdWas map[pci.Addr]uint16
}

// buildTopology plugs in:
//
//	00:00.0 host bridge
//	00:01.0 PCI Express root port, secondary bus 1
//	01:00.0   82574L behind it: mem32 BAR0, I/O BAR2, mem32 BAR3 with MSI-X
//	00:02.0 82576 function 0 (multi-function): 64-bit BARs, MSI-X, AER
//	00:02.1 82576 function 1
//	00:02.2 absent: reads all ones
//	00:02.3 82576 function 3
//	00:03.0 a function whose BAR1 sizes to zero
//	00:04.0 82540EM: mem32 BAR0 and an I/O BAR1
//	05:00.0 a function on a bus no bridge leads to
func buildTopology(t testing.TB) *simTopo {
	t.Helper()
	m, err := sim.New(sim.Config{VTd: vtd.Config{AddrWidth: 48}})
	if err != nil {
		t.Fatal(err)
	}
	st := &simTopo{m: m, msix: map[pci.Addr]int{}, pcie: map[pci.Addr]int{}, aer: map[pci.Addr]int{}, cmdWas: map[pci.Addr]uint16{}}
	add := func(a pci.Addr, c *sim.ConfigSpace) {
		t.Helper()
		if err := m.Bus.Add(a, plain{c}); err != nil {
			t.Fatal(err)
		}
		st.cmdWas[a] = c.Command()
	}

	add(pci.Addr{}, sim.NewConfigSpace(0x8086, 0x29c0, 0x060000, 0))

	rp := sim.NewConfigSpace(0x8086, 0x29c1, 0x060400, 1)
	rp.SetBridge(0, 1, 1)
	st.pcie[pci.Addr{Dev: 1}] = rp.AddCap(pci.CapPCIe, pcieCap(pci.PortRoot))
	add(pci.Addr{Dev: 1}, rp)

	nic := sim.NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)
	nic.SetSubsystem(0x8086, 0xa01f)
	nic.SetRevision(0)
	nic.SetBAR(0, pci.BARMem32, 128<<10, false)
	nic.SetBAR(2, pci.BARIO, 32, false)
	nic.SetBAR(3, pci.BARMem32, 16<<10, false)
	nic.AddCap(pci.CapPM, slices.Concat(le16(0xc822), le16(0)))
	st.pcie[pci.Addr{Bus: 1}] = nic.AddCap(pci.CapPCIe, pcieCap(pci.PortEndpoint))
	st.msix[pci.Addr{Bus: 1}] = nic.AddCap(pci.CapMSIX, msixCap(5, 3, 0, 0x2000))
	st.aer[pci.Addr{Bus: 1}] = nic.AddExtCap(pci.ExtCapAER, 1, make([]byte, 0x34))
	add(pci.Addr{Bus: 1}, nic)
	st.nic = nic

	for _, fn := range []uint8{0, 1, 3} {
		c := sim.NewConfigSpace(0x8086, 0x10c9, 0x020000, 0)
		c.SetMultiFunction()
		c.SetRevision(1)
		c.SetBAR(0, pci.BARMem64, 128<<10, false)
		c.SetBAR(2, pci.BARMem64, 4<<20, true)
		c.SetBAR(4, pci.BARMem64, 16<<10, false)
		a := pci.Addr{Dev: 2, Fn: fn}
		st.pcie[a] = c.AddCap(pci.CapPCIe, pcieCap(pci.PortEndpoint))
		st.msix[a] = c.AddCap(pci.CapMSIX, msixCap(10, 4, 0, 0x2000))
		st.aer[a] = c.AddExtCap(pci.ExtCapAER, 1, make([]byte, 0x34))
		c.AddExtCap(pci.ExtCapDSN, 1, make([]byte, 8))
		add(a, c)
		if fn == 0 {
			st.igb = c
		}
	}

	zero := sim.NewConfigSpace(0x1af4, 0x1000, 0x020000, 0)
	zero.SetBAR(0, pci.BARMem32, 4096, false)
	zero.SetBAR(1, pci.BARMem32, 0, false)
	add(pci.Addr{Dev: 3}, zero)

	legacy := sim.NewConfigSpace(0x8086, 0x100e, 0x020000, 0)
	legacy.SetBAR(0, pci.BARMem32, 128<<10, false)
	legacy.SetBAR(1, pci.BARIO, 64, false)
	add(pci.Addr{Dev: 4}, legacy)

	add(pci.Addr{Bus: 5}, sim.NewConfigSpace(0x8086, 0x15f3, 0x020000, 0))
	return st
}

func TestEnumerateSimulatedMachine(t *testing.T) {
	st := buildTopology(t)
	bus := st.m.Bus
	fns, err := pci.Enumerate(bus, pci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []pci.Addr
	for _, f := range fns {
		got = append(got, f.Addr)
	}
	want := []pci.Addr{{}, {Dev: 1}, {Dev: 2}, {Dev: 2, Fn: 1}, {Dev: 2, Fn: 3}, {Dev: 3}, {Dev: 4}, {Bus: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("enumerated %v\nwant %v", got, want)
	}

	// The absent function reads all ones and is not listed.
	if v, err := bus.ReadConfig(pci.Addr{Dev: 2, Fn: 2}, 0, 4); err != nil || v != 0xffffffff {
		t.Errorf("00:02.2 reads %#x, %v", v, err)
	}

	for _, f := range fns {
		cfg := bus.Device(f.Addr).Config()
		// Every BAR matches what firmware (the bus) assigned.
		for i := 0; i < 6; i++ {
			kind, size, addr := cfg.BAR(i)
			b := f.BARs[i]
			if b.Kind != kind || b.Size != size || (kind != pci.BARNone && b.Addr != addr) {
				t.Errorf("%v bar%d: enumerated %v, machine has %v %#x at %#x", f.Addr, i, b, kind, size, addr)
			}
		}
		// Sizing left decoding as firmware set it.
		if cmd := cfg.Command(); cmd != st.cmdWas[f.Addr] {
			t.Errorf("%v: COMMAND %#x after enumeration, was %#x", f.Addr, cmd, st.cmdWas[f.Addr])
		}
		if off, ok := st.msix[f.Addr]; ok {
			c, found := pci.FindCap(f.Caps, pci.CapMSIX)
			if !found || c.Offset != off {
				t.Errorf("%v: msi-x %v, %v; want at %#x", f.Addr, c, found, off)
			}
		}
		if off, ok := st.aer[f.Addr]; ok {
			if c, found := pci.FindExtCap(f.Caps, pci.ExtCapAER); !found || c.Offset != off {
				t.Errorf("%v: aer %v, %v; want at %#x", f.Addr, c, found, off)
			}
		}
	}

	byAddr := func(a pci.Addr) *pci.Function {
		for _, f := range fns {
			if f.Addr == a {
				return f
			}
		}
		t.Fatalf("%v not enumerated", a)
		return nil
	}

	rp := byAddr(pci.Addr{Dev: 1})
	if !rp.IsBridge() || rp.Secondary != 1 || rp.Subordinate != 1 {
		t.Errorf("root port %+v", rp)
	}
	p, err := pci.ReadPCIe(bus, rp.Addr, st.pcie[rp.Addr])
	if err != nil || p.Type != pci.PortRoot || p.LinkWidth != 4 {
		t.Errorf("root port pcie %+v, %v", p, err)
	}

	nic := byAddr(pci.Addr{Bus: 1})
	if nic.SubVendor != 0x8086 || nic.SubDevice != 0xa01f || nic.Class != 0x020000 {
		t.Errorf("nic %+v", nic)
	}
	if nic.BARs[2].Kind != pci.BARIO || nic.BARs[2].Size != 32 {
		t.Errorf("nic i/o bar %v", nic.BARs[2])
	}
	mx, err := pci.ReadMSIX(bus, nic.Addr, st.msix[nic.Addr])
	if err != nil {
		t.Fatal(err)
	}
	if mx.TableSize != 5 || mx.TableBIR != 3 || mx.TableOffset != 0 || mx.PBABIR != 3 || mx.PBAOffset != 0x2000 {
		t.Errorf("nic msi-x %+v", mx)
	}
	if err := mx.Check(nic.BARs); err != nil {
		t.Error(err)
	}

	igb := byAddr(pci.Addr{Dev: 2})
	for _, i := range []int{0, 2, 4} {
		if igb.BARs[i].Kind != pci.BARMem64 || igb.BARs[i+1].Kind != pci.BARNone {
			t.Errorf("igb bar%d %v, bar%d %v", i, igb.BARs[i], i+1, igb.BARs[i+1])
		}
	}
	if !igb.BARs[2].Prefetchable || igb.BARs[2].Size != 4<<20 || igb.BARs[0].Addr < 1<<32 {
		t.Errorf("igb 64-bit BARs %v", igb.BARs)
	}
	mx, err = pci.ReadMSIX(bus, igb.Addr, st.msix[igb.Addr])
	if err != nil || mx.TableSize != 10 || mx.TableBIR != 4 {
		t.Errorf("igb msi-x %+v, %v", mx, err)
	}
	if err := mx.Check(igb.BARs); err != nil {
		t.Error(err)
	}

	zero := byAddr(pci.Addr{Dev: 3})
	if zero.BARs[0].Size != 4096 || zero.BARs[1].Kind != pci.BARNone {
		t.Errorf("BAR sizing to zero: %v", zero.BARs)
	}
	legacy := byAddr(pci.Addr{Dev: 4})
	if legacy.BARs[1].Kind != pci.BARIO || legacy.BARs[1].Size != 64 || legacy.BARs[1].Addr < 0xc000 {
		t.Errorf("i/o BAR %v", legacy.BARs[1])
	}

	// Brute force finds the function no bridge leads to.
	all, err := pci.Enumerate(bus, pci.Options{AllBuses: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(fns)+1 || all[len(all)-1].Addr != (pci.Addr{Bus: 5}) {
		t.Errorf("all buses: %d functions, last %v", len(all), all[len(all)-1])
	}
}

// A driver's probe path: match by id, turn bus mastering on, turn I/O off,
// reach BAR0.
func TestBindAndEnableSimulated(t *testing.T) {
	st := buildTopology(t)
	bus := st.m.Bus
	fns, err := pci.Enumerate(bus, pci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := pci.NewMatcher(
		pci.Driver{Name: "e1000e", IDs: []pci.ID{{Vendor: 0x8086, Device: 0x10d3}}},
		pci.Driver{Name: "igb", IDs: []pci.ID{{Vendor: 0x8086, Device: 0x10c9}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Bind(fns); n != 4 {
		t.Errorf("bound %d functions, want 4", n)
	}
	var nic *pci.Function
	var lines []string
	for _, f := range fns {
		lines = append(lines, f.String())
		if f.Driver == "e1000e" {
			nic = f
		}
	}
	if want := "pci 01:00.0 8086:10d3 e1000e"; !slices.Contains(lines, want) {
		t.Errorf("no line %q in %q", want, lines)
	}
	d := nic.Describe()
	for _, s := range []string{"class 020000 network/ethernet", "bar2 io 0x", "caps pm@40 pcie@48 msix@", "aer@100"} {
		if !strings.Contains(d, s) {
			t.Errorf("Describe lacks %q:\n%s", s, d)
		}
	}

	if st.nic.BusMaster() {
		t.Fatal("bus master on before the driver asked")
	}
	if err := pci.EnableBusMaster(bus, nic.Addr); err != nil {
		t.Fatal(err)
	}
	if err := pci.DisableIO(bus, nic.Addr); err != nil {
		t.Fatal(err)
	}
	if !st.nic.BusMaster() || st.nic.IOEnabled() || !st.nic.MemoryEnabled() {
		t.Errorf("COMMAND %#x: want bus master and memory on, I/O off", st.nic.Command())
	}
	if _, err := bus.Regs(nic.Addr, 0); err != nil {
		t.Errorf("BAR0 after enumeration: %v", err)
	}
	if err := pci.DisableMemory(bus, nic.Addr); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Regs(nic.Addr, 0); err == nil {
		t.Error("BAR0 reachable with memory decoding off")
	}
}

// The machine's own MCFG table parses and describes the window its ECAM
// answers in.
func TestSimulatedMCFG(t *testing.T) {
	st := buildTopology(t)
	mc, err := acpi.ParseMCFG(st.m.MCFG())
	if err != nil {
		t.Fatal(err)
	}
	w, ok := mc.Find(0, 1)
	if !ok || w.Base != sim.ECAMBase || w.Size() != sim.ECAMSize {
		t.Fatalf("MCFG window %v, %v", w, ok)
	}
	// ECAM offset of 01:00.0's vendor/device dword, as the table says.
	off := uint32(1<<20 | 0<<15 | 0<<12)
	if got := st.m.ECAM().Read32(off); got != 0x10d38086 {
		t.Errorf("ECAM read of 01:00.0 = %#x", got)
	}
}

// BenchmarkEnumerate measures a full enumeration of the simulated
// topology, BAR sizing included, following bridges and brute force.
func BenchmarkEnumerate(b *testing.B) {
	st := buildTopology(b)
	for _, mode := range []struct {
		name string
		opt  pci.Options
	}{{"bridges", pci.Options{}}, {"all-buses", pci.Options{AllBuses: true}}} {
		b.Run(mode.name, func(b *testing.B) {
			accesses := countingConfig{Config: st.m.Bus}
			for b.Loop() {
				if _, err := pci.Enumerate(&accesses, mode.opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(accesses.n)/float64(b.N), "accesses/op")
		})
	}
}

type countingConfig struct {
	pci.Config
	n int
}

func (c *countingConfig) ReadConfig(a pci.Addr, off, size int) (uint32, error) {
	c.n++
	return c.Config.ReadConfig(a, off, size)
}

func (c *countingConfig) WriteConfig(a pci.Addr, off, size int, v uint32) error {
	c.n++
	return c.Config.WriteConfig(a, off, size, v)
}
