package sim_test

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// msixDev is a function with an MSI-X table at offset 0 of BAR 0.
type msixDev struct {
	cfg *sim.ConfigSpace
	tab nicmodel.MSIXTable
}

func (d *msixDev) Config() *sim.ConfigSpace { return d.cfg }
func (d *msixDev) MMIORead(bar int, off uint32, size int) uint64 {
	return d.tab.Read(off, size)
}
func (d *msixDev) MMIOWrite(bar int, off uint32, size int, v uint64) {
	d.tab.Write(off, size, v)
}
func (d *msixDev) ConfigWritten(off, size int, v uint32) { d.tab.ConfigWritten() }

// A device's MSI-X message goes through the VT-d unit's interrupt
// remapping: a remappable-format message reaches the vector its IRTE
// names, and one whose IRTE names another source is blocked, counted
// and recorded, reaching no vector.
func TestMSIXThroughInterruptRemapping(t *testing.T) {
	cfg := vtd.QEMU()
	cfg.InvalidationCost = -1
	m, err := sim.New(sim.Config{VTd: cfg})
	if err != nil {
		t.Fatal(err)
	}
	a := pci.Addr{Bus: 1, Dev: 4, Fn: 2}
	src := uint16(1)<<8 | 4<<3 | 2
	cs := sim.NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)
	cs.SetBAR(0, pci.BARMem32, 16<<10, false)
	dev := &msixDev{cfg: cs}
	dev.tab = nicmodel.AddMSIX(cs, 4, 0, 0x2000, m.IRQ(a))
	if err := m.Bus.Add(a, dev); err != nil {
		t.Fatal(err)
	}
	capOff := 0
	for p, _ := m.Bus.ReadConfig(a, 0x34, 1); p != 0; p, _ = m.Bus.ReadConfig(a, int(p)+1, 1) {
		if id, _ := m.Bus.ReadConfig(a, int(p), 1); id == nicmodel.CapMSIX {
			capOff = int(p)
			break
		}
	}
	if capOff == 0 {
		t.Fatal("no MSI-X capability")
	}
	if err := m.Bus.WriteConfig(a, 4, 2, sim.CmdMemory); err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.WriteConfig(a, capOff+2, 2, 1<<15); err != nil { // MSI-X Enable
		t.Fatal(err)
	}
	regs, err := m.Bus.Regs(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	program := func(entry int, addr uint64, data uint32) {
		regs.Write32(uint32(entry*16), uint32(addr))
		regs.Write32(uint32(entry*16+4), uint32(addr>>32))
		regs.Write32(uint32(entry*16+8), data)
		regs.Write32(uint32(entry*16+12), 0) // unmasked
	}
	v, err := m.Vector()
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Vector()
	if err != nil {
		t.Fatal(err)
	}

	// Remapping off: the compatibility-format message goes straight on.
	program(0, v.MSIAddress(), uint32(v.MSIData()))
	dev.tab.Signal(0)
	if v.Raised() != 1 {
		t.Fatalf("remapping off: vector raised %d times", v.Raised())
	}

	// The interrupt remapping table, from the entry format (VT-d 9.10):
	// entry 5 sends the first vector and validates the requester id;
	// entry 6 names another function.
	irt, err := m.Mem.Alloc(4096, 4096)
	if err != nil {
		t.Fatal(err)
	}
	put := func(i int, vector uint8, sid uint16) {
		binary.LittleEndian.PutUint64(irt.Buf[i*16:], vtd.IRTE_P|uint64(vector)<<vtd.IRTE_V_SHIFT)
		binary.LittleEndian.PutUint64(irt.Buf[i*16+8:], vtd.SVT_SID<<vtd.IRTE_SVT_SHIFT|uint64(sid))
	}
	put(5, v.Vector(), src)
	put(6, other.Vector(), src^1<<3) // device 5, not 4
	m.Mem.FlushCache(irt.Buf)        // the unit does not snoop (ECAP.C clear)
	r := m.VTdRegs()
	r.Write64(vtd.IRTA, uint64(irt.Phys)|7) // 256 entries
	r.Write32(vtd.GCMD, vtd.GCMD_SIRTP)
	r.Write32(vtd.GCMD, vtd.GCMD_IRE)
	if r.Read32(vtd.GSTS)&(vtd.GSTS_IRES|vtd.GSTS_IRTPS) != vtd.GSTS_IRES|vtd.GSTS_IRTPS {
		t.Fatalf("GSTS %#x", r.Read32(vtd.GSTS))
	}

	// Remappable format, handle 5: the vector comes from the IRTE, not
	// the message's data.
	remappable := func(handle uint64) uint64 { return 0xfee0_0000 | handle<<5 | vtd.MSI_ADDR_FORMAT }
	program(1, remappable(5), uint32(other.Vector()))
	dev.tab.Signal(1)
	if v.Raised() != 2 || other.Raised() != 0 {
		t.Fatalf("remapped through entry 5: vector raised %d, other %d", v.Raised(), other.Raised())
	}
	// Compatibility format is blocked now: CFIS is clear.
	dev.tab.Signal(0)
	if v.Raised() != 2 || m.BlockedMessages() != 1 {
		t.Fatalf("compatibility format with CFIS clear: raised %d, blocked %d", v.Raised(), m.BlockedMessages())
	}
	r.Write32(vtd.FRCD+12, vtd.FRCD_F>>32)
	// Entry 6 validates another requester id: blocked and recorded.
	program(2, remappable(6), 0)
	dev.tab.Signal(2)
	if v.Raised() != 2 || other.Raised() != 0 || m.BlockedMessages() != 2 || m.StrayMessages() != 0 {
		t.Fatalf("wrong source: raised %d/%d, blocked %d, stray %d", v.Raised(), other.Raised(), m.BlockedMessages(), m.StrayMessages())
	}
	lo, hi := r.Read64(vtd.FRCD), r.Read64(vtd.FRCD+8)
	if lo != 6<<vtd.FRCD_FI_IR_SHIFT || hi != vtd.FRCD_F|uint64(vtd.ReasonIRSource)<<vtd.FRCD_FR_SHIFT|uint64(src) {
		t.Errorf("fault record %#x %#x, want index 6, reason 0x26, source %#x", lo, hi, src)
	}
	if st := m.VTd.Stats(); st.InterruptsRemapped != 1 || st.InterruptsBlocked != 2 || st.InterruptsPassed != 1 {
		t.Errorf("unit stats %+v", st)
	}
}
