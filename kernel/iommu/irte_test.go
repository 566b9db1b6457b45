package iommu

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

func remapRig(t *testing.T) *rig {
	return newRig(t, sim.Config{VTd: vtd.QEMU()}, Options{Interrupts: true})
}

// With interrupt remapping the queue carries every invalidation, and so
// it does on a unit of major version 6 or later, which has no
// register-based invalidation (VT-d 3.3, 6.5), remapping or not: an
// unmapped page stops translating although the model caches it, and the
// registers are never used.
func TestQueuedInvalidation(t *testing.T) {
	v6 := vtd.QEMU()
	v6.Version = 0x60
	for name, r := range map[string]*rig{
		"interrupt remapping":         remapRig(t),
		"version 6 without remapping": newRig(t, sim.Config{VTd: v6}, Options{}),
	} {
		t.Run(name, func(t *testing.T) {
			d := r.domain(devA)
			buf := make([]byte, kernel.PageSize)
			addr, err := d.Map(buf, kernel.ToDevice)
			if err != nil {
				t.Fatal(err)
			}
			want := physOf(r.segs(buf), 0)
			r.mustTranslate(devA, uint64(addr), false, want, "mapped")
			r.mustTranslate(devA, uint64(addr), false, want, "mapped, now from the IOTLB")
			if err := d.Unmap(addr, len(buf), kernel.ToDevice); err != nil {
				t.Fatal(err)
			}
			r.mustFault(devA, uint64(addr), false, "unmapped: the queued invalidation dropped the cached translation")
			ms, us := r.m.VTd.Stats(), r.u.Stats()
			if ms.IgnoredInvals != 0 {
				t.Errorf("%d register-based invalidations issued while the queue was on", ms.IgnoredInvals)
			}
			if ms.QueueErrors != 0 || ms.QueueWaits == 0 || us.QueuedSubmissions != ms.QueueWaits {
				t.Errorf("queue: %d errors, the model saw %d waits, the driver counted %d submissions", ms.QueueErrors, ms.QueueWaits, us.QueuedSubmissions)
			}
		})
	}
}

// A remapped message delivers the vector and destination of its entry,
// from the device it was made for alone; cleared, it delivers nothing,
// though the model kept the entry in its cache.
func TestRemapMSI(t *testing.T) {
	r := remapRig(t)
	if !r.u.RemapsInterrupts() {
		t.Fatal("interrupt remapping is not on")
	}
	compat := Message{Addr: 0xfee00000 | 3<<12, Data: 0x45}
	m, entry, err := r.u.Remap(source(devA), compat)
	if err != nil {
		t.Fatal(err)
	}
	if m.Addr&msiRemappable == 0 || m.Addr == compat.Addr {
		t.Fatalf("remapped message %#x is not in remappable format", m.Addr)
	}
	deliver := func(from uint16, msg Message) (uint64, uint32, bool) {
		return r.m.VTd.Interrupt(from, msg.Addr, msg.Data)
	}
	for i := range 2 { // the second from the interrupt entry cache
		addr, data, ok := deliver(source(devA), m)
		if !ok || addr != compat.Addr || data&0xff != 0x45 {
			t.Fatalf("delivery %d: %#x %#x %v, want %#x %#x", i, addr, data, ok, compat.Addr, compat.Data)
		}
	}
	if _, _, ok := deliver(source(devB), m); ok {
		t.Error("another device's message through the entry was delivered")
	}
	if _, _, ok := deliver(source(devA), compat); ok {
		t.Error("a compatibility-format message was delivered with remapping on")
	}
	if err := r.u.Unremap(entry); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := deliver(source(devA), m); ok {
		t.Error("a cleared entry still delivers: its cached copy was not invalidated")
	}
	if err := r.u.Unremap(entry); err == nil {
		t.Error("an entry cleared twice")
	}
	faults := r.u.Faults()
	if len(faults) == 0 {
		t.Error("blocked interrupts recorded no fault")
	}
}

// RemapMSI wraps a vector: the device's message names an entry, the
// vector stays the vector, and closing gives both back.
func TestRemapMSIVector(t *testing.T) {
	r := remapRig(t)
	v, err := r.m.Vector()
	if err != nil {
		t.Fatal(err)
	}
	rv, err := r.u.RemapMSI(source(devA), v)
	if err != nil {
		t.Fatal(err)
	}
	if rv.Vector() != v.Vector() || rv.MSIAddress() == v.MSIAddress() {
		t.Errorf("remapped vector %d message %#x; platform's %d %#x", rv.Vector(), rv.MSIAddress(), v.Vector(), v.MSIAddress())
	}
	addr, data, ok := r.m.VTd.Interrupt(source(devA), rv.MSIAddress(), uint32(rv.MSIData()))
	if !ok {
		t.Fatal("the remapped message was blocked")
	}
	r.m.Message(addr, data)
	if !v.Wait(0) {
		t.Error("the remapped message did not reach its vector")
	}
	if err := rv.Close(); err != nil {
		t.Fatal(err)
	}
	if n := r.u.Stats().InterruptEntries; n != 0 {
		t.Errorf("%d entries in use after Close", n)
	}
	if err := rv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRemapRefused(t *testing.T) {
	r := qemuRig(t) // no remapping asked for
	if r.u.RemapsInterrupts() {
		t.Fatal("remapping on without being asked for")
	}
	if _, _, err := r.u.Remap(source(devA), Message{Addr: 0xfee00000, Data: 0x40}); err == nil || !strings.Contains(err.Error(), "off") {
		t.Errorf("Remap with remapping off: %v", err)
	}
	r = remapRig(t)
	if _, _, err := r.u.Remap(source(devA), Message{Addr: 0xfed00000, Data: 0x40}); err == nil {
		t.Error("a message outside the interrupt window was remapped")
	}
	for i := range irtEntries - 1 {
		if _, _, err := r.u.Remap(source(devA), Message{Addr: 0xfee00000, Data: 0x40}); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if _, _, err := r.u.Remap(source(devA), Message{Addr: 0xfee00000, Data: 0x40}); err != nil {
		t.Fatalf("last entry: %v", err)
	}
	if _, _, err := r.u.Remap(source(devA), Message{Addr: 0xfee00000, Data: 0x40}); err == nil {
		t.Error("more entries handed out than the table holds")
	}
}

// A descriptor the unit refuses stops the queue (FSTS.IQE): the
// submission fails at once, naming the slot, and so does every later
// one rather than wait on a queue that no longer moves.
func TestQueueError(t *testing.T) {
	r := remapRig(t)
	r.u.mu.Lock()
	err := r.u.qi.submit("reserved descriptor", [2]uint64{0xf, 0})
	r.u.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "bad descriptor at slot") {
		t.Fatalf("reserved descriptor type: %v", err)
	}
	d := r.domain(devA)
	buf := make([]byte, kernel.PageSize)
	addr, err := d.Map(buf, kernel.ToDevice)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Unmap(addr, len(buf), kernel.ToDevice); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("unmap after the queue stopped: %v", err)
	}
}

// A blocked interrupt is recorded as one, naming its entry, and is not
// counted as a DMA fault of the device: drivers read those to drop the
// frames a refused write left unfilled.
func TestInterruptFault(t *testing.T) {
	r := remapRig(t)
	d := r.domain(devB)
	m, entry, err := r.u.Remap(source(devA), Message{Addr: 0xfee00000, Data: 0x45})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := r.m.VTd.Interrupt(source(devB), m.Addr, m.Data); ok {
		t.Fatal("devB's message through devA's entry was delivered")
	}
	faults := r.u.Faults()
	if len(faults) != 1 {
		t.Fatalf("faults %v, want one", faults)
	}
	f := faults[0]
	if !f.Interrupt || f.Index != entry || f.Source != source(devB) || f.Reason != 0x26 {
		t.Errorf("fault %+v: want devB's interrupt through entry %d refused for its requester (0x26)", f, entry)
	}
	if !strings.Contains(f.String(), "interrupt entry") {
		t.Errorf("fault reads %q", f)
	}
	if n := d.DMAFaults(); n != 0 {
		t.Errorf("the blocked interrupt counted as %d DMA faults of devB", n)
	}
	if s := r.u.Stats(); s.InterruptFaults != 1 || s.Faults != 1 {
		t.Errorf("stats: %d faults, %d of them interrupts; want 1, 1", s.Faults, s.InterruptFaults)
	}
}

// Firmware may leave compatibility-format interrupts passing (CFI set):
// Enable clears it with remapping on, so they are blocked.
func TestRemapClearsCFI(t *testing.T) {
	m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		t.Fatal(err)
	}
	regs := m.VTdRegs()
	regs.Write32(vtd.GCMD, vtd.GCMD_CFI)
	if regs.Read32(vtd.GSTS)&vtd.GSTS_CFIS == 0 {
		t.Fatal("the model did not take CFI")
	}
	u, err := New(regs, m.Mem, Options{Clock: m.Clock, Interrupts: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	if s := regs.Read32(vtd.GSTS); s&vtd.GSTS_CFIS != 0 || s&vtd.GSTS_IRES == 0 {
		t.Errorf("GSTS %#x: want IRES set, CFIS clear", s)
	}
	if _, _, ok := m.VTd.Interrupt(source(devA), 0xfee00000, 0x45); ok {
		t.Error("a compatibility-format message passes")
	}
}

// Turning translation off leaves interrupt remapping on, so a device
// probed then must still get an entry, and does.
func TestRemapWithTranslationOff(t *testing.T) {
	r := remapRig(t)
	if err := r.u.Disable(); err != nil {
		t.Fatal(err)
	}
	if !r.u.RemapsInterrupts() {
		t.Fatal("remapping reported off with translation off")
	}
	m, _, err := r.u.Remap(source(devA), Message{Addr: 0xfee00000, Data: 0x45})
	if err != nil {
		t.Fatal(err)
	}
	if _, data, ok := r.m.VTd.Interrupt(source(devA), m.Addr, m.Data); !ok || data&0xff != 0x45 {
		t.Errorf("entry made with translation off: delivered %v, data %#x", ok, data)
	}
	if _, _, ok := r.m.VTd.Interrupt(source(devA), 0xfee00000, 0x45); ok {
		t.Error("a compatibility-format message passes with translation off")
	}
}

// With the processors in x2APIC mode the unit runs in extended mode and
// each entry names its destination as a 32-bit x2APIC id: the model,
// decoding by IRTA.EIME as hardware does, delivers to the id the
// message named, and the listing reads it back the same way. A unit
// without extended mode is refused rather than left to drop the high
// bits of the id.
func TestRemapX2APIC(t *testing.T) {
	cfg := vtd.QEMU()
	cfg.EIM = true
	r := newRig(t, sim.Config{VTd: cfg}, Options{Interrupts: true, X2APIC: true})
	if irta := r.m.VTdRegs().Read64(regIRTA); irta&irtaEIME == 0 {
		t.Fatalf("IRTA %#x: extended interrupt mode not on", irta)
	}
	compat := Message{Addr: 0xfee00000 | 3<<12, Data: 0x45}
	m, entry, err := r.u.Remap(source(devA), compat)
	if err != nil {
		t.Fatal(err)
	}
	addr, data, ok := r.m.VTd.Interrupt(source(devA), m.Addr, m.Data)
	if !ok || addr != compat.Addr || data != compat.Data {
		t.Errorf("delivered %#x %#x %v, want %#x %#x: the entry's destination is not the x2APIC id 3", addr, data, ok, compat.Addr, compat.Data)
	}
	if l := r.u.Interrupts(); len(l) != 1 || l[0].Entry != entry || l[0].Dest != 3 || l[0].Vector != 0x45 {
		t.Errorf("listing %v, want entry %d to apic 3 on vector 69", l, entry)
	}

	m2, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(m2.VTdRegs(), m2.Mem, Options{Clock: m2.Clock, Interrupts: true, X2APIC: true}); err == nil || !strings.Contains(err.Error(), "ECAP.EIM") {
		t.Errorf("a unit without extended interrupt mode taken for x2APIC processors: %v", err)
	}
}

// Firmware may hand over a unit with its invalidation queue and
// interrupt remapping on (some server firmware does). Told it owns the
// unit, Enable turns both off, the queue once drained or stopped on an
// error, and starts its own: entries of its table deliver,
// compatibility format is blocked. (Not told so, it refuses the unit:
// TestEnableRefusesQueuedInvalidation.)
func TestTakeOverFirmwareQueue(t *testing.T) {
	firmware := func(t *testing.T, broken bool) *sim.Machine {
		m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
		if err != nil {
			t.Fatal(err)
		}
		regs := m.VTdRegs()
		queue, err := m.Mem.Alloc(kernel.PageSize, kernel.PageSize)
		if err != nil {
			t.Fatal(err)
		}
		table, err := m.Mem.Alloc(kernel.PageSize, kernel.PageSize)
		if err != nil {
			t.Fatal(err)
		}
		regs.Write64(vtd.IQA, uint64(queue.Phys))
		regs.Write32(vtd.GCMD, vtd.GCMD_QIE)
		if broken {
			// A descriptor of no known type: the queue stops on it.
			queue.Buf[0] = 0xf
			regs.Write64(vtd.IQT, 1<<4)
			if regs.Read32(vtd.FSTS)&fstsIQE == 0 {
				t.Fatal("the model did not stop on the bad descriptor")
			}
		}
		regs.Write64(vtd.IRTA, uint64(table.Phys)|7)
		regs.Write32(vtd.GCMD, vtd.GCMD_QIE|vtd.GCMD_SIRTP)
		regs.Write32(vtd.GCMD, vtd.GCMD_QIE|vtd.GCMD_IRE|vtd.GCMD_CFI)
		if s := regs.Read32(vtd.GSTS); s&(vtd.GSTS_QIES|vtd.GSTS_IRES|vtd.GSTS_CFIS) != vtd.GSTS_QIES|vtd.GSTS_IRES|vtd.GSTS_CFIS {
			t.Fatalf("firmware's state not taken: GSTS %#x", s)
		}
		return m
	}
	for name, broken := range map[string]bool{"queue drained": false, "queue stopped on an error": true} {
		t.Run(name, func(t *testing.T) {
			m := firmware(t, broken)
			u, err := New(m.VTdRegs(), m.Mem, Options{Clock: m.Clock, Interrupts: true, TakeOver: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Enable(); err != nil {
				t.Fatal(err)
			}
			if got := u.TookOver(); got != "interrupt remapping and the invalidation queue" {
				t.Errorf("TookOver %q", got)
			}
			msg, entry, err := u.Remap(source(devA), Message{Addr: 0xfee00000, Data: 0x45})
			if err != nil {
				t.Fatal(err)
			}
			if _, data, ok := m.VTd.Interrupt(source(devA), msg.Addr, msg.Data); !ok || data&0xff != 0x45 {
				t.Errorf("an entry of the new table delivered %v, data %#x", ok, data)
			}
			if _, _, ok := m.VTd.Interrupt(source(devA), 0xfee00000, 0x45); ok {
				t.Error("compatibility format passes: firmware's CFI was kept")
			}
			// An invalidation through the new queue completes.
			if err := u.Unremap(entry); err != nil {
				t.Error(err)
			}
		})
	}
	// Without remapping asked for, the unit is left with neither, and
	// invalidates through its registers again.
	m := firmware(t, false)
	u, err := New(m.VTdRegs(), m.Mem, Options{Clock: m.Clock, TakeOver: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	if s := m.VTdRegs().Read32(vtd.GSTS); s&(vtd.GSTS_QIES|vtd.GSTS_IRES) != 0 || s&vtd.GSTS_TES == 0 {
		t.Errorf("GSTS %#x: want translation on, no queue, no remapping", s)
	}
	if err := u.inv.iotlb(invGlobal, 0, 0, 0); err != nil {
		t.Errorf("a register-based invalidation after the take-over: %v", err)
	}
}
