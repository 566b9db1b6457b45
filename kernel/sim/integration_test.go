package sim

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// hostTables are VT-d tables built by hand in the machine's memory, the
// way a driver would: root table, one context table, a 4-level table tree.
type hostTables struct {
	t     testing.TB
	m     *Machine
	pages []kernel.Region
	root  kernel.Region
}

func (h *hostTables) page() kernel.Region {
	r, err := h.m.Mem.Alloc(kernel.PageSize, kernel.PageSize)
	if err != nil {
		h.t.Fatal(err)
	}
	h.pages = append(h.pages, r)
	return r
}

func (h *hostTables) flushAll() {
	for _, p := range h.pages {
		h.m.Mem.FlushCache(p.Buf)
	}
}

// mapPage maps one 4 KiB page for source src in domain did.
func (h *hostTables) mapPage(src, did uint16, iova uint64, phys kernel.PhysAddr, perm uint64) {
	if h.root.Buf == nil {
		h.root = h.page()
	}
	re := h.root.Buf[uint64(src>>8)*16:]
	ct := h.find(binary.LittleEndian.Uint64(re) &^ 0xfff)
	if ct.Buf == nil {
		ct = h.page()
		binary.LittleEndian.PutUint64(re, uint64(ct.Phys)|1)
	}
	ce := ct.Buf[uint64(src&0xff)*16:]
	top := h.find(binary.LittleEndian.Uint64(ce) &^ 0xfff)
	if top.Buf == nil {
		top = h.page()
		binary.LittleEndian.PutUint64(ce, uint64(top.Phys)|1)
		binary.LittleEndian.PutUint64(ce[8:], 2|uint64(did)<<8) // 4-level
	}
	table := top
	for level := 4; level > 1; level-- {
		e := table.Buf[(iova>>(12+9*(level-1))&0x1ff)*8:]
		next := h.find(binary.LittleEndian.Uint64(e) &^ 0xfff)
		if next.Buf == nil {
			next = h.page()
			binary.LittleEndian.PutUint64(e, uint64(next.Phys)|3)
		}
		table = next
	}
	binary.LittleEndian.PutUint64(table.Buf[(iova>>12&0x1ff)*8:], uint64(phys)|perm)
}

func (h *hostTables) find(p uint64) kernel.Region {
	for _, r := range h.pages {
		if uint64(r.Phys) == p {
			return r
		}
	}
	return kernel.Region{}
}

func enableVTd(t testing.TB, r kernel.Regs, root kernel.PhysAddr) {
	t.Helper()
	r.Write64(vtd.RTADDR, uint64(root))
	r.Write32(vtd.GCMD, vtd.GCMD_SRTP)
	r.Write64(vtd.CCMD, vtd.CCMD_ICC|vtd.CCMD_GLOBAL<<vtd.CCMD_CIRG_SHIFT)
	r.Write64(vtd.IOTLB, vtd.IOTLB_IVT|vtd.IOTLB_GLOBAL<<vtd.IOTLB_IIRG_SHIFT)
	r.Write32(vtd.GCMD, vtd.GCMD_TE)
	if r.Read32(vtd.GSTS)&vtd.GSTS_TES == 0 {
		t.Fatal("translation did not enable")
	}
}

func addBusMaster(t testing.TB, m *Machine, a pci.Addr) *DMAPort {
	t.Helper()
	if err := m.Bus.Add(a, newDMAModel()); err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.WriteConfig(a, 4, 2, CmdMemory|CmdBusMaster); err != nil {
		t.Fatal(err)
	}
	return m.Port(a)
}

func TestDMAThroughVTd(t *testing.T) {
	cfg := vtd.QEMU()
	cfg.InvalidationCost = -1
	m := NewMachine(Config{VTd: cfg, NonCoherentDMA: true})
	a := pci.Addr{Bus: 0, Dev: 3}
	port := addBusMaster(t, m, a)

	rx := make([]byte, 2*kernel.PageSize)
	segs, err := m.Mem.Pin(rx)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostTables{t: t, m: m}
	const iova = 0x7000_0000
	// Map the two pages of the buffer at consecutive IOVAs; the buffer's
	// physical offset carries over.
	base := segs[0].Phys &^ (kernel.PageSize - 1)
	off := uint64(segs[0].Phys % kernel.PageSize)
	for i := range kernel.PhysAddr(3) {
		h.mapPage(port.Source(), 1, iova+uint64(i)*kernel.PageSize, base+i*kernel.PageSize, 3)
	}
	enableVTd(t, m.VTdRegs(), h.root.Phys)

	// Tables never flushed: the non-snooping unit reads zeroes, so the
	// root entry is not present.
	err = port.Write(iova+off, []byte("frame"))
	var f *vtd.Fault
	if !errors.As(err, &f) || f.Reason != vtd.ReasonRootNotPresent || f.Source != port.Source() {
		t.Fatalf("DMA through unflushed tables: %v", err)
	}
	r := m.VTdRegs()
	if hi := r.Read64(vtd.FRCD + 8); hi&vtd.FRCD_F == 0 || vtd.Reason(hi>>vtd.FRCD_FR_SHIFT) != vtd.ReasonRootNotPresent {
		t.Fatalf("fault record %#x after the root fault", hi)
	}
	r.Write64(vtd.FRCD+8, vtd.FRCD_F)
	h.flushAll()
	if err := port.Write(iova+off+kernel.PageSize-2, []byte("frame")); err != nil {
		t.Fatal(err)
	}
	// Non-coherent: the CPU sees the frame only after SyncForCPU.
	if string(rx[kernel.PageSize-2:kernel.PageSize+3]) == "frame" {
		t.Fatal("device write visible before SyncForCPU")
	}
	m.Mem.SyncForCPU(segs[0].Phys, len(rx))
	if got := string(rx[kernel.PageSize-2 : kernel.PageSize+3]); got != "frame" {
		t.Fatalf("after SyncForCPU the buffer holds %q", got)
	}
	// An unmapped IOVA faults and is recorded for the driver to read.
	if err := port.Read(iova+0x10_0000, make([]byte, 4)); !errors.As(err, &f) || f.Reason != vtd.ReasonRead {
		t.Fatalf("DMA to an unmapped IOVA: %v", err)
	}
	if fsts := r.Read32(vtd.FSTS); fsts&vtd.FSTS_PPF == 0 {
		t.Fatalf("FSTS %#x after a fault", fsts)
	}
	if hi := r.Read64(vtd.FRCD + 8); uint16(hi) != port.Source() || hi&vtd.FRCD_T == 0 {
		t.Errorf("fault record %#x", hi)
	}
	if st := m.DMAStats(); st.Writes != 2 || st.Reads != 1 || st.Faults != 2 || st.BytesWritten != 5 || st.BytesRead != 0 {
		t.Errorf("DMA stats %+v", st)
	}
	// Fault events reach the unit's interrupt once unmasked.
	r.Write32(vtd.FECTL, 0)
	if !m.VTdIRQ().Wait(time.Second) {
		t.Error("no fault interrupt after unmasking a pending event")
	}
}

func TestIRQAndClock(t *testing.T) {
	m := NewMachine(Config{VTd: vtd.QEMU()})
	q := m.IRQ(pci.Addr{Dev: 1})
	if q != m.IRQ(pci.Addr{Dev: 1}) {
		t.Fatal("two lines for one function")
	}
	start := m.Clock.Now()
	if q.Wait(time.Second) {
		t.Fatal("Wait returned true with nothing raised")
	}
	if d := m.Clock.Now() - start; d < time.Second {
		t.Errorf("virtual time advanced %v across a 1 s timeout", d)
	}
	q.Raise()
	q.Raise()
	if !q.Wait(time.Second) || q.Wait(0) {
		t.Error("two raises before a wait are not one pending edge")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 100 {
			m.Clock.Sleep(time.Millisecond)
		}
		q.Raise()
	}()
	for !q.Wait(time.Millisecond) {
	}
	wg.Wait()
	if q.Raised() != 3 {
		t.Errorf("raised %d", q.Raised())
	}
	if m.Clock.Now()-start < time.Second+100*time.Millisecond {
		t.Errorf("clock at %v", m.Clock.Now())
	}
}

func TestECAM(t *testing.T) {
	m := NewMachine(Config{VTd: vtd.QEMU()})
	c := NewConfigSpace(0x8086, 0x125c, 0x020000, 0)
	if err := m.Bus.Add(pci.Addr{Bus: 2, Dev: 0}, cfgOnly{c}); err != nil {
		t.Fatal(err)
	}
	e := m.ECAM()
	if v := e.Read32(2<<20 | 0); v != 0x125c8086 {
		t.Errorf("ECAM id %#x", v)
	}
	if v := e.Read32(3<<20 | 4<<15 | 0); v != 0xffffffff {
		t.Errorf("ECAM absent %#x", v)
	}
	e.Write32(2<<20|4, CmdBusMaster)
	if !c.BusMaster() {
		t.Error("ECAM write lost")
	}
}
