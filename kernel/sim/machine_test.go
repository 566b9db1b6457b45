package sim

import (
	"errors"
	"testing"

	"github.com/ether9/ether9/kernel/acpi"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

func TestMachineTablesParse(t *testing.T) {
	for _, aw := range []int{39, 48} {
		cfg := vtd.QEMU()
		cfg.AddrWidth = aw
		m, err := New(Config{VTd: cfg})
		if err != nil {
			t.Fatal(err)
		}
		d, err := acpi.ParseDMAR(m.DMAR())
		if err != nil {
			t.Fatalf("aw %d: DMAR: %v", aw, err)
		}
		if d.HostAddrWidth != aw || len(d.Units) != 1 || d.Units[0].Base != VTdBase || !d.Units[0].IncludeAll() {
			t.Errorf("aw %d: DMAR parsed as %+v", aw, d)
		}
		mc, err := acpi.ParseMCFG(m.MCFG())
		if err != nil {
			t.Fatalf("MCFG: %v", err)
		}
		if len(mc.Allocations) != 1 || mc.Allocations[0].Base != ECAMBase || mc.Allocations[0].EndBus != 255 {
			t.Errorf("MCFG parsed as %+v", mc)
		}
	}
}

func TestDMARRegisterSetSize(t *testing.T) {
	for nfr, want := range map[int]byte{1: 0, 200: 0, 256: 1} {
		cfg := vtd.QEMU()
		cfg.NFR = nfr
		m, err := New(Config{VTd: cfg})
		if err != nil {
			t.Fatal(err)
		}
		b := m.DMAR()
		if got := b[acpi.HeaderLen+12+5]; got != want {
			t.Errorf("%d fault records: register set order %d, want %d", nfr, got, want)
		}
	}
}

func TestNewMachineBadConfig(t *testing.T) {
	if _, err := New(Config{VTd: vtd.Config{AddrWidth: 40}}); err == nil {
		t.Fatal("New accepted a 40-bit VT-d unit")
	}
	m := NewMachine(Config{VTd: vtd.Config{AddrWidth: 40}})
	if m.Err() == nil || m.VTd == nil {
		t.Fatalf("NewMachine: err %v, unit %v", m.Err(), m.VTd)
	}
}

// dmaModel is a minimal device model with one memory BAR.
type dmaModel struct {
	cfg  *ConfigSpace
	regs [16]uint32
}

func newDMAModel() *dmaModel {
	c := NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)
	c.SetBAR(0, pci.BARMem32, 128<<10, false)
	return &dmaModel{cfg: c}
}

func (d *dmaModel) Config() *ConfigSpace { return d.cfg }
func (d *dmaModel) MMIORead(bar int, off uint32, size int) uint64 {
	if off/4 < 16 {
		return uint64(d.regs[off/4])
	}
	return 0
}
func (d *dmaModel) MMIOWrite(bar int, off uint32, size int, v uint64) {
	if off/4 < 16 {
		d.regs[off/4] = uint32(v)
	}
}

func TestPortTranslationOffAndBusMaster(t *testing.T) {
	m := NewMachine(Config{VTd: vtd.QEMU()})
	a := pci.Addr{Bus: 0, Dev: 2}
	if err := m.Bus.Add(a, newDMAModel()); err != nil {
		t.Fatal(err)
	}
	r, err := m.Mem.Alloc(8192, 4096)
	if err != nil {
		t.Fatal(err)
	}
	port := m.Port(a)
	if err := port.Write(uint64(r.Phys)+10, []byte("hello")); !errors.Is(err, ErrBusMasterOff) {
		t.Fatalf("DMA with bus master off: %v", err)
	}
	cmd, _ := m.Bus.ReadConfig(a, 4, 2)
	if err := m.Bus.WriteConfig(a, 4, 2, cmd|CmdBusMaster); err != nil {
		t.Fatal(err)
	}
	if err := port.Write(uint64(r.Phys)+4094, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := string(r.Buf[4094:4099]); got != "hello" {
		t.Fatalf("memory holds %q", got)
	}
	// Past the end of the allocation is the guard page.
	if err := port.Read(uint64(r.Phys)+8190, make([]byte, 4)); !errors.Is(err, ErrUnregistered) {
		t.Fatalf("overrun read: %v", err)
	}
	if st := m.DMAStats(); st.Refused != 1 || st.MemoryErrors != 1 || st.BytesWritten != 5 || st.BytesRead != 2 {
		t.Errorf("DMA stats %+v", st)
	}
}
