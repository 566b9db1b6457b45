package iommu

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// TestBringUpFromDMAR finds the unit the way the platform does, through
// the ACPI DMAR table, and checks the enable and disable sequences against
// the model's state.
func TestBringUpFromDMAR(t *testing.T) {
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()})
	dmar, err := acpi.ParseDMAR(m.DMAR())
	if err != nil {
		t.Fatal(err)
	}
	drhd, ok := dmar.UnitFor(0, devA.Bus, devA.Dev, devA.Fn)
	if !ok || drhd.Base != sim.VTdBase {
		t.Fatalf("DMAR unit for %v: %+v %v", devA, drhd, ok)
	}
	u, err := New(m.VTdRegs(), m.Mem, Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	c := u.Caps()
	if c.MGAW != dmar.HostAddrWidth || u.Levels() != 4 || !c.PSI || !c.Large2M() || c.Coherent {
		t.Errorf("caps %v, levels %d", c, u.Levels())
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	gsts := m.VTd.Read32(regGSTS)
	if gsts&gstsTES == 0 || gsts&gstsRTPS == 0 {
		t.Errorf("GSTS %#x after Enable", gsts)
	}
	if rta := m.VTd.Read64(regRTADDR); rta != uint64(u.root.Phys) {
		t.Errorf("RTADDR %#x, root table at %#x", rta, u.root.Phys)
	}
	ms := m.VTd.Stats()
	if ms.RootPointerLoads != 1 || ms.ContextGlobal != 1 || ms.IOTLBGlobal != 1 {
		t.Errorf("model saw %d root loads, %d context and %d IOTLB global invalidations, want 1 each",
			ms.RootPointerLoads, ms.ContextGlobal, ms.IOTLBGlobal)
	}
	if err := u.Enable(); err != nil || m.VTd.Stats().RootPointerLoads != 1 {
		t.Errorf("second Enable: %v, root loads %d", err, m.VTd.Stats().RootPointerLoads)
	}
	// Translation is on: an IOVA with no domain faults.
	if _, err := m.VTd.Translate(source(devA), 0x1000, false); err == nil {
		t.Error("translation on, but a device with no domain reached memory")
	}
	if err := u.Disable(); err != nil {
		t.Fatal(err)
	}
	if gsts := m.VTd.Read32(regGSTS); gsts&gstsTES != 0 {
		t.Errorf("GSTS %#x after Disable", gsts)
	}
	if p, err := m.VTd.Translate(source(devA), 0x1000, false); err != nil || p != 0x1000 {
		t.Errorf("translation off: %#x, %v; want untranslated", p, err)
	}
}

// TestEnableRefusesQueuedInvalidation: a unit another owner left with
// queued invalidation on ignores register-based invalidation, so Enable
// must refuse rather than run with stale caches.
func TestEnableRefusesQueuedInvalidation(t *testing.T) {
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()})
	m.VTd.Write32(regGCMD, gcmdQIE)
	u, err := New(m.VTdRegs(), m.Mem, Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err == nil {
		t.Fatal("Enable succeeded with queued invalidation on")
	}
	if m.VTd.Read32(regGSTS)&gstsTES != 0 {
		t.Error("translation turned on anyway")
	}
}

// stuckRegs is a unit whose handshakes never complete.
type stuckRegs struct{ kernel.Regs }

func (s stuckRegs) Read32(off uint32) uint32 {
	if off == regGSTS {
		return 0
	}
	return s.Regs.Read32(off)
}

func TestEnableTimeout(t *testing.T) {
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()})
	u, err := New(stuckRegs{m.VTdRegs()}, m.Mem, Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	start := m.Clock.Now()
	err = u.Enable()
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("set root table pointer")) {
		t.Fatalf("Enable on a stuck unit: %v", err)
	}
	if waited := m.Clock.Now() - start; waited < defaultTimeout {
		t.Errorf("gave up after %v of virtual time, timeout is %v", waited, defaultTimeout)
	}
}

func TestNewBadUnit(t *testing.T) {
	m := sim.NewMachine(sim.Config{VTd: vtd.Config{AddrWidth: 39}})
	if _, err := New(m.VTdRegs(), m.Mem, Options{Levels: 4}); err == nil {
		t.Error("4-level tables forced on a 39-bit unit")
	}
	if _, err := New(m.VTdRegs(), m.Mem, Options{Levels: 5}); err == nil {
		t.Error("5-level tables accepted")
	}
	if _, err := New(m.VTdRegs(), m.Mem, Options{IOVALimit: 0x1234}); !errors.Is(err, kernel.ErrUnaligned) {
		t.Errorf("unaligned IOVA limit: %v", err)
	}
	if _, err := New(m.ECAM(), m.Mem, Options{}); err == nil {
		t.Error("New accepted a window with no unit behind it")
	}
}

// TestTableFlushes: the model's unit does not snoop (ECAP.C=0) and walks
// only what FlushCache wrote back. Our tables work there, and the same
// driver with its flushes dropped does not.
func TestTableFlushes(t *testing.T) {
	for _, flush := range []bool{true, false} {
		r := qemuRig(t)
		r.u.tm.flush = flush
		d := r.domain(devA)
		buf := make([]byte, kernel.PageSize)
		addr, err := d.Map(buf, kernel.FromDevice)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.translate(devA, uint64(addr), true)
		if flush && err != nil {
			t.Errorf("with flushes: %v", err)
		}
		if !flush && err == nil {
			t.Error("without flushes the unit still saw the tables: the check is void")
		}
	}
}

// TestNonCoherentSync: with non-coherent DMA a device write through a
// mapping is invisible to the CPU until SyncForCPU, and a CPU write is
// invisible to the device until SyncForDevice.
func TestNonCoherentSync(t *testing.T) {
	r := newRig(t, sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: true}, Options{})
	r.m.Mem.SetScatter(true) // the buffer's pages are physically apart
	d := r.domain(devA)
	port := r.m.Port(devA)

	rx := make([]byte, 3*kernel.PageSize)
	addr, err := d.Map(rx, kernel.FromDevice)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.segs(rx)); n < 3 {
		t.Fatalf("buffer in %d segments, want scattered pages", n)
	}
	frame := bytes.Repeat([]byte("ether9!"), 1000) // 7000 bytes, across a page boundary
	at := 100
	if err := port.Write(uint64(addr)+uint64(at), frame); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rx[at:at+len(frame)], make([]byte, len(frame))) {
		t.Fatal("device write visible before SyncForCPU: memory is not modelled non-coherent")
	}
	// Sync only the received part, at an offset into the mapping.
	if err := d.SyncForCPU(addr+kernel.DMAAddr(at), len(frame), kernel.FromDevice); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rx[at:at+len(frame)], frame) {
		t.Fatal("device write not visible after SyncForCPU")
	}
	if err := d.Unmap(addr, len(rx), kernel.FromDevice); err != nil {
		t.Fatal(err)
	}

	tx := make([]byte, 2*kernel.PageSize)
	addr, err = d.Map(tx, kernel.ToDevice)
	if err != nil {
		t.Fatal(err)
	}
	copy(tx, frame)
	got := make([]byte, len(frame))
	if err := port.Read(uint64(addr), got); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, frame) {
		t.Fatal("CPU write visible to the device before SyncForDevice")
	}
	if err := d.SyncForDevice(addr, len(tx), kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
	if err := port.Read(uint64(addr), got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, frame) {
		t.Fatal("CPU write not visible to the device after SyncForDevice")
	}
	if errs := r.m.Mem.Errors(); len(errs) != 0 {
		t.Errorf("memory misuse: %v", errs)
	}
}

// TestCoherentAlloc: a coherent allocation is reachable by the device for
// read and write with no syncs, and gone after FreeCoherent.
func TestCoherentAlloc(t *testing.T) {
	r := newRig(t, sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: true}, Options{})
	d := r.domain(devA)
	c, err := d.AllocCoherent(1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Buf) != 1000 || cap(c.Buf) != 1000 {
		t.Errorf("coherent buffer len %d cap %d", len(c.Buf), cap(c.Buf))
	}
	copy(c.Buf, "descriptor")
	got := make([]byte, 10)
	port := r.m.Port(devA)
	if err := port.Read(uint64(c.Addr), got); err != nil || string(got) != "descriptor" {
		t.Fatalf("device read %q, %v", got, err)
	}
	if err := port.Write(uint64(c.Addr)+500, []byte("done")); err != nil || string(c.Buf[500:504]) != "done" {
		t.Fatalf("device write: %q, %v", c.Buf[500:504], err)
	}
	if err := d.FreeCoherent(c); err != nil {
		t.Fatal(err)
	}
	r.mustFault(devA, uint64(c.Addr), false, "after FreeCoherent")
	if s := r.u.Stats(); s.MappedPages != 0 || s.IOVAInUse != 0 {
		t.Errorf("after FreeCoherent: %+v", s)
	}
}

// Firmware with pre-boot DMA protection may leave the unit's protected
// memory regions on, which block DMA into them even through the page
// tables. Enable turns them off once translation is on, and says so: a
// mapped buffer is reachable again.
func TestEnableOpensProtectedMemory(t *testing.T) {
	cfg := vtd.QEMU()
	cfg.PMR = true
	m := sim.NewMachine(sim.Config{VTd: cfg})
	if err := m.Bus.Add(devA, &dmaDevice{cfg: sim.NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)}); err != nil {
		t.Fatal(err)
	}
	regs := m.VTdRegs()
	regs.Write32(vtd.PLMBASE, 0)
	regs.Write32(vtd.PLMLIM, 0xffe00000) // all of the low 4 GiB
	regs.Write64(vtd.PHMBASE, 1<<32)
	regs.Write64(vtd.PHMLIM, 1<<40) // and far above
	regs.Write32(vtd.PMEN, vtd.PMEN_EPM)
	u, err := New(regs, m.Mem, Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	if got := u.TookOver(); got != "its protected memory regions" {
		t.Errorf("TookOver %q", got)
	}
	d, err := u.Domain(source(devA))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, kernel.PageSize)
	addr, err := d.Map(buf, kernel.ToDevice)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.VTd.Translate(source(devA), uint64(addr), false); err != nil {
		t.Errorf("a mapped buffer: %v", err)
	}
	if s := m.VTd.Stats(); s.ProtectedBlocked != 0 {
		t.Errorf("%d requests blocked by protected memory", s.ProtectedBlocked)
	}
}
