package iommu

import (
	"errors"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// dmaDevice is a bare PCI function whose only job is to own a DMA port.
type dmaDevice struct{ cfg *sim.ConfigSpace }

func (d *dmaDevice) Config() *sim.ConfigSpace           { return d.cfg }
func (d *dmaDevice) MMIORead(int, uint32, int) uint64   { return 0 }
func (d *dmaDevice) MMIOWrite(int, uint32, int, uint64) {}

// rig is a simulated machine with one or more DMA-capable functions and our
// driver on its VT-d unit.
type rig struct {
	t testing.TB
	m *sim.Machine
	u *Unit
}

var (
	devA = pci.Addr{Bus: 0, Dev: 3, Fn: 0}
	devB = pci.Addr{Bus: 2, Dev: 0, Fn: 1}
)

func newRig(t testing.TB, cfg sim.Config, opt Options) *rig {
	t.Helper()
	m, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []pci.Addr{devA, devB} {
		if err := m.Bus.Add(a, &dmaDevice{cfg: sim.NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)}); err != nil {
			t.Fatal(err)
		}
		if err := m.Bus.WriteConfig(a, 4, 2, sim.CmdMemory|sim.CmdBusMaster); err != nil {
			t.Fatal(err)
		}
	}
	if opt.Clock == nil {
		opt.Clock = m.Clock
	}
	u, err := New(m.VTdRegs(), m.Mem, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, m: m, u: u}
}

func qemuRig(t testing.TB) *rig { return newRig(t, sim.Config{VTd: vtd.QEMU()}, Options{}) }

func source(a pci.Addr) uint16 { return SourceID(a.Bus, a.Dev, a.Fn) }

func (r *rig) domain(a pci.Addr) *Domain {
	r.t.Helper()
	d, err := r.u.Domain(source(a))
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

// translate asks the hardware model what a DMA by a to iova reaches.
func (r *rig) translate(a pci.Addr, iova uint64, write bool) (kernel.PhysAddr, error) {
	return r.m.VTd.Translate(source(a), iova, write)
}

// mustFault checks that the model refuses a DMA by a at iova.
func (r *rig) mustFault(a pci.Addr, iova uint64, write bool, why string) {
	r.t.Helper()
	if p, err := r.translate(a, iova, write); err == nil {
		r.t.Fatalf("%s: iova %#x (write %v) translates to %#x, want a fault", why, iova, write, p)
	} else {
		var f *vtd.Fault
		if !errors.As(err, &f) {
			r.t.Fatalf("%s: iova %#x: %v is not a translation fault", why, iova, err)
		}
	}
	// Keep the model's own log short; the fault registers are what this
	// package reads.
	r.m.VTd.ClearFaultLog()
}

// mustTranslate checks that the model translates iova to want.
func (r *rig) mustTranslate(a pci.Addr, iova uint64, write bool, want kernel.PhysAddr, why string) {
	r.t.Helper()
	p, err := r.translate(a, iova, write)
	if err != nil {
		r.t.Fatalf("%s: iova %#x (write %v): %v, want %#x", why, iova, write, err, want)
	}
	if p != want {
		r.t.Fatalf("%s: iova %#x (write %v) translates to %#x, want %#x", why, iova, write, p, want)
	}
}

// physOf returns the physical address of byte i of a pinned buffer from
// its segments.
func physOf(segs []kernel.Segment, i int) kernel.PhysAddr {
	for _, s := range segs {
		if i < s.Len {
			return s.Phys + kernel.PhysAddr(i)
		}
		i -= s.Len
	}
	return 0
}

// segs returns the physical segments of buf, which must be mapped (and so
// pinned) already.
func (r *rig) segs(buf []byte) []kernel.Segment {
	r.t.Helper()
	s, err := r.m.Mem.Pin(buf)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.m.Mem.Unpin(buf); err != nil {
		r.t.Fatal(err)
	}
	return s
}
