package iommu

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// TestFaultRecords: device DMA through its port to IOVAs it may not use is
// recorded by the unit and read back, decoded and cleared by this package.
func TestFaultRecords(t *testing.T) {
	cfg := vtd.QEMU()
	cfg.NFR = 4
	r := newRig(t, sim.Config{VTd: cfg}, Options{})
	d := r.domain(devA)
	tx := make([]byte, kernel.PageSize)
	txAddr, err := d.Map(tx, kernel.ToDevice)
	if err != nil {
		t.Fatal(err)
	}
	port := r.m.Port(devA)
	if err := port.Read(uint64(txAddr), make([]byte, 64)); err != nil {
		t.Fatalf("read of a to-device mapping: %v", err)
	}
	// A write to an unmapped IOVA, a read of one, and a write to a
	// buffer mapped for the device to read only.
	if err := port.Write(0x7654_3000+0x10, []byte{1, 2, 3}); err == nil {
		t.Fatal("write to an unmapped IOVA succeeded")
	}
	if err := port.Read(0x1234_5000, make([]byte, 8)); err == nil {
		t.Fatal("read of an unmapped IOVA succeeded")
	}
	if err := port.Write(uint64(txAddr), []byte{9}); err == nil {
		t.Fatal("write to a to-device mapping succeeded")
	}
	if fsts := r.m.VTd.Read32(regFSTS); fsts&fstsPPF == 0 {
		t.Fatalf("FSTS %#x: no pending fault", fsts)
	}
	src := source(devA)
	want := []Fault{
		{Source: src, Addr: 0x7654_3000, Write: true, Reason: 5},
		{Source: src, Addr: 0x1234_5000, Write: false, Reason: 6},
		{Source: src, Addr: uint64(txAddr) &^ 0xfff, Write: true, Reason: 5},
	}
	got := r.u.Faults()
	if len(got) != len(want) {
		t.Fatalf("faults %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fault %d = %v, want %v", i, got[i], want[i])
		}
	}
	if s := got[1].String(); !strings.Contains(s, "00:03.0 read 0x12345000") || !strings.Contains(s, "read permission") {
		t.Errorf("fault text %q", s)
	}
	// Read back means cleared in hardware: no record has F, PPF is off.
	if fsts := r.m.VTd.Read32(regFSTS); fsts&(fstsPPF|fstsPFO) != 0 {
		t.Errorf("FSTS %#x after reading the faults", fsts)
	}
	for i := range cfg.NFR {
		if hi := r.m.VTd.Read64(r.u.caps.FRO + uint32(i)*frcdSize + 8); hi&frcdF != 0 {
			t.Errorf("fault record %d still valid: %#x", i, hi)
		}
	}
	if s := r.u.Stats(); s.Faults != 3 {
		t.Errorf("stats count %d faults, want 3", s.Faults)
	}
	// The log keeps them until ClearFaults; new faults are recorded again
	// into the freed registers, by another device too.
	if err := r.m.Port(devB).Write(0x9000, []byte{1}); err == nil {
		t.Fatal("device B wrote to an IOVA with no domain")
	}
	got = r.u.Faults()
	if len(got) != 4 || got[3].Source != source(devB) || got[3].Reason != 1 {
		t.Errorf("after a fault by device B, whose bus has no context table: %v", got)
	}
	r.u.ClearFaults()
	if f := r.u.Faults(); len(f) != 0 {
		t.Errorf("after ClearFaults: %v", f)
	}
	if s := r.u.Stats(); s.Faults != 4 {
		t.Errorf("counter %d after ClearFaults, want 4 (counters keep faults)", s.Faults)
	}
}

// TestFaultOverflow: with one record and two faults before software looks,
// the unit sets PFO; we count the overflow, keep the recorded fault and
// clear PFO so recording resumes.
func TestFaultOverflow(t *testing.T) {
	r := qemuRig(t) // NFR=1
	r.domain(devA)
	port := r.m.Port(devA)
	_ = port.Write(0x10000, []byte{1})
	_ = port.Write(0x20000, []byte{1})
	if fsts := r.m.VTd.Read32(regFSTS); fsts&fstsPFO == 0 {
		t.Fatalf("FSTS %#x: no overflow", fsts)
	}
	f := r.u.Faults()
	if len(f) != 1 || f[0].Addr != 0x10000 {
		t.Fatalf("faults %v, want the first one only", f)
	}
	if s := r.u.Stats(); s.FaultOverflows != 1 {
		t.Errorf("overflows %d, want 1", s.FaultOverflows)
	}
	if fsts := r.m.VTd.Read32(regFSTS); fsts != 0 {
		t.Errorf("FSTS %#x after service", fsts)
	}
	_ = port.Read(0x30000, make([]byte, 4))
	if f := r.u.Faults(); len(f) != 2 || f[1].Addr != 0x30000 || f[1].Write {
		t.Errorf("recording did not resume: %v", f)
	}
}

// TestEnableClearsStaleRecords: a unit left by firmware with translation
// on and a fault record set (here the only one) must still record the
// driver's faults: Enable takes translation down and reads the old
// records before its own, or the first new fault finds the register full
// and is lost to an overflow.
func TestEnableClearsStaleRecords(t *testing.T) {
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()}) // NFR=1
	if err := m.Bus.Add(devA, &dmaDevice{cfg: sim.NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.WriteConfig(devA, 4, 2, sim.CmdMemory|sim.CmdBusMaster); err != nil {
		t.Fatal(err)
	}
	m.VTd.Write32(regGCMD, gcmdTE) // no root table: every DMA faults
	if _, err := m.VTd.Translate(0x0100, 0x5000, false); err == nil {
		t.Fatal("translation on without a root table, and a DMA went through")
	}
	if fsts := m.VTd.Read32(regFSTS); fsts&fstsPPF == 0 {
		t.Fatalf("FSTS %#x: the firmware's fault is not recorded", fsts)
	}
	u, err := New(m.VTdRegs(), m.Mem, Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	d, err := u.Domain(source(devA))
	if err != nil {
		t.Fatal(err)
	}
	hole, err := d.ReserveHole(kernel.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Port(devA).Write(uint64(hole), []byte{1}); err == nil {
		t.Fatal("device write into a hole succeeded")
	}
	var mine []Fault
	for _, f := range u.Faults() {
		if f.Source == source(devA) {
			mine = append(mine, f)
		}
	}
	if len(mine) != 1 || mine[0].Addr != uint64(hole) || !mine[0].Write {
		t.Errorf("driver's faults %v, want one write at %#x (model: %d recorded, %d dropped)",
			mine, uint64(hole), m.VTd.Stats().FaultsRecorded, m.VTd.Stats().FaultsDropped)
	}
	if s := u.Stats(); s.FaultOverflows != 0 {
		t.Errorf("%d fault overflows after Enable", s.FaultOverflows)
	}
	if n := d.DMAFaults(); n != 1 {
		t.Errorf("domain counts %d faults, want 1", n)
	}
}

// TestSignalFaults: a unit told to signal faults sends its message for a
// fault recorded while none was pending and for an overflow, and nothing
// while both stay set (QEMU's unit has one record); FaultEvent counts the
// event and clears the record and the overflow, after which the next
// fault is announced again.
func TestSignalFaults(t *testing.T) {
	r := qemuRig(t)
	var sent int
	r.m.VTd.SetFaultNotify(func() { sent++ })
	r.domain(devA)
	r.mustFault(devA, 0x1000, true, "before SignalFaults")
	if sent != 0 {
		t.Fatalf("a masked unit sent %d fault events", sent)
	}
	r.u.FaultEvent() // clears the record; the unit resets masked

	const addr, data = 0xfee01000, 0x51
	r.u.SignalFaults(addr, data)
	if a, d := uint64(r.m.VTd.Read32(vtd.FEUADDR))<<32|uint64(r.m.VTd.Read32(vtd.FEADDR)), r.m.VTd.Read32(vtd.FEDATA); a != addr || d != data {
		t.Errorf("message: %#x to %#x, want %#x to %#x", d, a, data, addr)
	}
	for i, want := range []int{1, 2, 2} { // recorded, overflowed, lost
		r.mustFault(devA, uint64(0x2000+i*0x1000), true, "while unhandled")
		if sent != want {
			t.Fatalf("fault %d unhandled: %d events in all, want %d", i+1, sent, want)
		}
	}
	r.u.FaultEvent()
	r.mustFault(devA, 0x8000, true, "after the event was handled")
	if sent != 3 {
		t.Errorf("a fault after FaultEvent: %d events in all, want 3", sent)
	}
	r.u.FaultEvent()
	if s := r.u.Stats(); s.FaultEvents != 3 || s.Faults != 3 || s.FaultOverflows != 1 {
		t.Errorf("stats: %d events, %d faults, %d overflows; want 3, 3, 1", s.FaultEvents, s.Faults, s.FaultOverflows)
	}
}
