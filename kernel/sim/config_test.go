package sim

import (
	"testing"

	"github.com/ether9/ether9/pci"
)

// sizeBAR sizes BAR i the way enumeration software does: save, write all
// ones, read back, restore.
func sizeBAR(t *testing.T, b *Bus, a pci.Addr, i int) (orig, mask uint32) {
	t.Helper()
	off := 0x10 + 4*i
	orig, err := b.ReadConfig(a, off, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteConfig(a, off, 4, 0xffffffff); err != nil {
		t.Fatal(err)
	}
	mask, _ = b.ReadConfig(a, off, 4)
	if err := b.WriteConfig(a, off, 4, orig); err != nil {
		t.Fatal(err)
	}
	if back, _ := b.ReadConfig(a, off, 4); back != orig {
		t.Fatalf("BAR %d: restored %#x, reads %#x", i, orig, back)
	}
	return orig, mask
}

type cfgOnly struct{ c *ConfigSpace }

func (d cfgOnly) Config() *ConfigSpace                  { return d.c }
func (d cfgOnly) MMIORead(int, uint32, int) uint64      { return 0 }
func (d cfgOnly) MMIOWrite(int, uint32, int, uint64)    {}
func (d cfgOnly) ConfigWritten(off, size int, v uint32) {}

func TestBARSizing(t *testing.T) {
	c := NewConfigSpace(0x8086, 0x10c9, 0x020000, 0)
	c.SetBAR(0, pci.BARMem32, 128<<10, false)
	c.SetBAR(1, pci.BARIO, 32, false)
	c.SetBAR(2, pci.BARMem64, 16<<10, true)
	c.SetBAR(4, pci.BARMem64, 8<<30, false) // larger than 4 GiB
	b := NewBus()
	a := pci.Addr{Bus: 1, Dev: 0, Fn: 0}
	if err := b.Add(a, cfgOnly{c}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		bar        int
		flags      uint32 // the low, read-only bits
		mask       uint32 // read back after writing all ones
		upperMask  uint32 // for 64-bit BARs, the upper half
		wantUpper  bool
		alignCheck uint64
	}{
		{bar: 0, flags: 0x0, mask: 0xfffe0000, alignCheck: 128 << 10},
		{bar: 1, flags: 0x1, mask: 0xffffffe1, alignCheck: 32},
		{bar: 2, flags: 0xc, mask: 0xffffc00c, upperMask: 0xffffffff, wantUpper: true, alignCheck: 16 << 10},
		{bar: 4, flags: 0x4, mask: 0x00000004, upperMask: 0xfffffffe, wantUpper: true, alignCheck: 8 << 30},
	}
	for _, tc := range cases {
		orig, mask := sizeBAR(t, b, a, tc.bar)
		flagBits := uint32(0xf)
		if tc.flags&1 == 1 {
			flagBits = 0x3 // I/O
		}
		if orig&flagBits != tc.flags {
			t.Errorf("BAR %d flags %#x, want %#x", tc.bar, orig&flagBits, tc.flags)
		}
		if mask != tc.mask {
			t.Errorf("BAR %d sizing mask %#x, want %#x", tc.bar, mask, tc.mask)
		}
		addr := uint64(orig &^ 0xf)
		if tc.flags&1 == 1 {
			addr = uint64(orig &^ 3)
		}
		if tc.wantUpper {
			hiOrig, hiMask := sizeBAR(t, b, a, tc.bar+1)
			if hiMask != tc.upperMask {
				t.Errorf("BAR %d upper sizing mask %#x, want %#x", tc.bar, hiMask, tc.upperMask)
			}
			addr |= uint64(hiOrig) << 32
		}
		if addr == 0 || addr%tc.alignCheck != 0 {
			t.Errorf("BAR %d assigned %#x, not aligned to its size %#x", tc.bar, addr, tc.alignCheck)
		}
	}
	// BAR 0 and 2 of 64-bit is memory, BAR 1 is I/O: firmware enabled both.
	if cmd, _ := b.ReadConfig(a, 4, 2); cmd&(CmdMemory|CmdIO) != CmdMemory|CmdIO || cmd&CmdBusMaster != 0 {
		t.Errorf("command %#x after assignment", cmd)
	}
	// Unimplemented BARs, and BARs declared with size 0, size to zero.
	e := NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)
	e.SetBAR(1, pci.BARMem32, 0, false)
	ea := pci.Addr{Bus: 1, Dev: 1}
	if err := b.Add(ea, cfgOnly{e}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, mask := sizeBAR(t, b, ea, i); mask != 0 {
			t.Errorf("empty BAR %d sizes to %#x", i, mask)
		}
	}
}

func TestBadBARs(t *testing.T) {
	for name, set := range map[string]func(c *ConfigSpace){
		"not a power of two": func(c *ConfigSpace) { c.SetBAR(0, pci.BARMem32, 3000, false) },
		"64-bit in slot 5":   func(c *ConfigSpace) { c.SetBAR(5, pci.BARMem64, 4096, false) },
		"slot 6":             func(c *ConfigSpace) { c.SetBAR(6, pci.BARMem32, 4096, false) },
		"prefetchable I/O":   func(c *ConfigSpace) { c.SetBAR(0, pci.BARIO, 16, true) },
		"huge I/O":           func(c *ConfigSpace) { c.SetBAR(0, pci.BARIO, 1<<20, false) },
	} {
		c := NewConfigSpace(0x8086, 0x1234, 0x020000, 0)
		set(c)
		if c.Err() == nil {
			t.Errorf("%s: accepted", name)
		}
		if err := NewBus().Add(pci.Addr{}, cfgOnly{c}); err == nil {
			t.Errorf("%s: bus accepted the function", name)
		}
	}
	br := NewConfigSpace(0x8086, 0x1234, 0x060400, 1)
	br.SetBAR(2, pci.BARMem32, 4096, false) // bridges have two BARs
	if br.Err() == nil {
		t.Error("bridge BAR 2 accepted")
	}
	ep := NewConfigSpace(0x8086, 0x1234, 0x020000, 0)
	ep.SetBridge(0, 1, 1)
	if ep.Err() == nil {
		t.Error("bus numbers on an endpoint accepted")
	}
}

func TestConfigReadOnlyAndW1C(t *testing.T) {
	c := NewConfigSpace(0x8086, 0x15f3, 0x020000, 0)
	c.SetSubsystem(0x1043, 0x87d2)
	c.SetRevision(3)
	b := NewBus()
	a := pci.Addr{Dev: 3}
	if err := b.Add(a, cfgOnly{c}); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{0x00, 0x08, 0x2c} {
		before, _ := b.ReadConfig(a, off, 4)
		b.WriteConfig(a, off, 4, 0x12345678)
		if after, _ := b.ReadConfig(a, off, 4); after != before {
			t.Errorf("read-only dword %#x changed %#x -> %#x", off, before, after)
		}
	}
	if v, _ := b.ReadConfig(a, 0, 4); v != 0x15f38086 {
		t.Errorf("id dword %#x", v)
	}
	if v, _ := b.ReadConfig(a, 8, 4); v != 0x02000003 {
		t.Errorf("class/revision %#x", v)
	}
	if v, _ := b.ReadConfig(a, 0x2c, 4); v != 0x87d21043 {
		t.Errorf("subsystem %#x", v)
	}
	// Command bits: only the defined ones stick.
	b.WriteConfig(a, 4, 2, 0xffff)
	if v, _ := b.ReadConfig(a, 4, 2); v != 0x0547 {
		t.Errorf("command after writing all ones: %#x", v)
	}
	if !c.BusMaster() || !c.MemoryEnabled() || !c.IOEnabled() {
		t.Error("command helpers disagree with the register")
	}
	// Status: a model sets an error bit; software clears it by writing 1.
	c.Poke(6, 2, 1<<13) // received master abort
	b.WriteConfig(a, 6, 2, 0)
	if v, _ := b.ReadConfig(a, 6, 2); v&(1<<13) == 0 {
		t.Error("writing 0 cleared a write-1-to-clear bit")
	}
	b.WriteConfig(a, 6, 2, 1<<13)
	if v, _ := b.ReadConfig(a, 6, 2); v&(1<<13) != 0 {
		t.Error("writing 1 did not clear the bit")
	}
	// Byte access to the interrupt line.
	b.WriteConfig(a, 0x3c, 1, 11)
	if v, _ := b.ReadConfig(a, 0x3c, 2); v != 0x010b {
		t.Errorf("interrupt line/pin %#x", v)
	}
}

func TestCapabilityLists(t *testing.T) {
	c := NewConfigSpace(0x8086, 0x10c9, 0x020000, 0)
	pm := c.AddCap(0x01, make([]byte, 6))
	msix := c.AddCap(0x11, []byte{0x09, 0x00, 0x03, 0, 0, 0, 0x03, 0x20, 0, 0})
	pcie := c.AddCap(0x10, make([]byte, 58))
	aer := c.AddExtCap(0x0001, 2, make([]byte, 60))
	dsn := c.AddExtCap(0x0003, 1, make([]byte, 8))
	c.SetWriteMask(msix+3, []byte{0xc0})
	b := NewBus()
	a := pci.Addr{Dev: 1}
	if err := b.Add(a, cfgOnly{c}); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.ReadConfig(a, 6, 2); st&statusCapList == 0 {
		t.Fatal("status capability-list bit clear")
	}
	var ids []uint32
	var offs []int
	p, _ := b.ReadConfig(a, 0x34, 1)
	for p != 0 && len(ids) < 10 {
		id, _ := b.ReadConfig(a, int(p), 1)
		ids, offs = append(ids, id), append(offs, int(p))
		p, _ = b.ReadConfig(a, int(p)+1, 1)
	}
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 0x11 || ids[2] != 0x10 || offs[0] != pm || offs[1] != msix || offs[2] != pcie {
		t.Fatalf("capability walk: ids %v at %v", ids, offs)
	}
	if pm%4 != 0 || msix%4 != 0 || pcie%4 != 0 || pm < 0x40 {
		t.Errorf("capabilities not dword aligned above 0x40: %#x %#x %#x", pm, msix, pcie)
	}
	// MSI-X table BIR/offset read through; enable bit writable, rest not.
	if v, _ := b.ReadConfig(a, msix+4, 4); v != 3 {
		t.Errorf("MSI-X table offset/BIR %#x", v)
	}
	b.WriteConfig(a, msix+2, 2, 0xffff)
	if v, _ := b.ReadConfig(a, msix+2, 2); v != 0xc009 {
		t.Errorf("MSI-X message control %#x, want 0xc009", v)
	}
	if aer != 0x100 {
		t.Errorf("first extended capability at %#x", aer)
	}
	h, _ := b.ReadConfig(a, 0x100, 4)
	if h&0xffff != 1 || h>>16&0xf != 2 || int(h>>20) != dsn {
		t.Errorf("AER header %#x", h)
	}
	h, _ = b.ReadConfig(a, dsn, 4)
	if h&0xffff != 3 || h>>20 != 0 {
		t.Errorf("DSN header %#x", h)
	}
	// Too much for the standard space.
	if off := c.AddCap(0x09, make([]byte, 200)); off != 0 || c.Err() == nil {
		t.Errorf("oversized capability placed at %#x", off)
	}
}

func TestBridgeHeader(t *testing.T) {
	c := NewConfigSpace(0x8086, 0x29c1, 0x060400, 1)
	c.SetBridge(0, 1, 4)
	c.SetMultiFunction()
	b := NewBus()
	a := pci.Addr{Dev: 0x1c}
	if err := b.Add(a, cfgOnly{c}); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.ReadConfig(a, 0x18, 4); v&0xffffff != 0x040100 {
		t.Errorf("bus numbers %#x", v)
	}
	if h, _ := b.ReadConfig(a, 0x0e, 1); h != 0x81 {
		t.Errorf("header type %#x", h)
	}
	if c := NewConfigSpace(0x8086, 0x1521, 0x020000, 0x80); c.Err() != nil || c.b[cfgHeader] != 0x80 || c.nbars != 6 {
		t.Errorf("multi-function endpoint: header %#x, %d BARs, %v", c.b[cfgHeader], c.nbars, c.Err())
	}
	// Software renumbers the bridge.
	b.WriteConfig(a, 0x18, 4, 0x00050200)
	if v, _ := b.ReadConfig(a, 0x19, 1); v != 2 {
		t.Errorf("secondary bus %d after write", v)
	}
	// Memory window registers keep only their address bits.
	b.WriteConfig(a, 0x20, 4, 0xffffffff)
	if v, _ := b.ReadConfig(a, 0x20, 4); v != 0xfff0fff0 {
		t.Errorf("memory base/limit %#x", v)
	}
}

func TestBusAbsentAndBadAccess(t *testing.T) {
	b := NewBus()
	for size, want := range map[int]uint32{1: 0xff, 2: 0xffff, 4: 0xffffffff} {
		v, err := b.ReadConfig(pci.Addr{Bus: 7, Dev: 3}, 0, size)
		if err != nil || v != want {
			t.Errorf("absent function, %d bytes: %#x, %v", size, v, err)
		}
	}
	if err := b.WriteConfig(pci.Addr{Bus: 7}, 4, 2, 6); err != nil {
		t.Errorf("write to an absent function: %v", err)
	}
	for _, bad := range []struct{ off, size int }{{1, 4}, {2, 4}, {3, 2}, {0, 3}, {4096, 1}, {-4, 4}} {
		if _, err := b.ReadConfig(pci.Addr{}, bad.off, bad.size); err == nil {
			t.Errorf("read of %d bytes at %d accepted", bad.size, bad.off)
		}
	}
	c := NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)
	if err := b.Add(pci.Addr{Dev: 32}, cfgOnly{c}); err == nil {
		t.Error("device 32 accepted")
	}
	if err := b.Add(pci.Addr{Dev: 1}, cfgOnly{c}); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(pci.Addr{Dev: 1}, cfgOnly{NewConfigSpace(1, 2, 3, 0)}); err == nil {
		t.Error("second function in one slot accepted")
	}
	if err := b.Add(pci.Addr{Dev: 2}, nil); err == nil {
		t.Error("nil device accepted")
	}
	b.Add(pci.Addr{Bus: 3}, cfgOnly{NewConfigSpace(1, 2, 3, 0)})
	b.Add(pci.Addr{Dev: 1, Fn: 4}, cfgOnly{NewConfigSpace(1, 2, 3, 0)})
	if got := b.Functions(); len(got) != 3 || got[0] != (pci.Addr{Dev: 1}) || got[1] != (pci.Addr{Dev: 1, Fn: 4}) || got[2] != (pci.Addr{Bus: 3}) {
		t.Errorf("functions %v", got)
	}
}

// regModel records MMIO accesses.
type regModel struct {
	c       *ConfigSpace
	regs    map[uint32]uint64
	written []int // config offsets written, via ConfigWatcher
}

func (d *regModel) ConfigWritten(off, size int, v uint32) { d.written = append(d.written, off) }

func (d *regModel) Config() *ConfigSpace { return d.c }
func (d *regModel) MMIORead(bar int, off uint32, size int) uint64 {
	return d.regs[off]
}
func (d *regModel) MMIOWrite(bar int, off uint32, size int, v uint64) {
	d.regs[off] = v
}

func TestRegsDispatch(t *testing.T) {
	c := NewConfigSpace(0x8086, 0x10d3, 0x020000, 0)
	c.SetBAR(0, pci.BARMem32, 4096, false)
	c.SetBAR(2, pci.BARMem64, 8192, false)
	d := &regModel{c: c, regs: map[uint32]uint64{}}
	b := NewBus()
	a := pci.Addr{Dev: 2}
	if err := b.Add(a, d); err != nil {
		t.Fatal(err)
	}
	r, err := b.Regs(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.Write32(0x10, 0xabcd)
	r.Write64(0x18, 0x1122334455667788)
	if r.Read32(0x10) != 0xabcd || r.Read64(0x18) != 0x1122334455667788 {
		t.Errorf("register round trip: %#x %#x", r.Read32(0x10), r.Read64(0x18))
	}
	// Outside the BAR and unaligned accesses never reach the model.
	r.Write32(4096, 1)
	r.Write32(0x22, 1)
	if len(d.regs) != 2 || r.Read32(4096) != 0xffffffff {
		t.Errorf("stray accesses reached the model: %v", d.regs)
	}
	if _, err := b.Regs(a, 1); err == nil {
		t.Error("Regs of an unimplemented BAR")
	}
	if _, err := b.Regs(a, 3); err == nil {
		t.Error("Regs of the upper half of a 64-bit BAR")
	}
	if _, err := b.Regs(pci.Addr{Dev: 9}, 0); err == nil {
		t.Error("Regs of an absent function")
	}
	// Memory decoding off: existing windows read all ones, new ones fail.
	b.WriteConfig(a, 4, 2, 0)
	if v := r.Read32(0x10); v != 0xffffffff {
		t.Errorf("read with decoding off: %#x", v)
	}
	r.Write32(0x10, 5)
	if _, err := b.Regs(a, 0); err == nil {
		t.Error("Regs with COMMAND.MEM off")
	}
	b.WriteConfig(a, 4, 2, CmdMemory)
	if v := r.Read32(0x10); v != 0xabcd {
		t.Errorf("write with decoding off reached the model: %#x", v)
	}
	// The model heard both command writes; a bad access is not a write.
	b.WriteConfig(a, 3, 2, 0)
	if len(d.written) != 2 || d.written[0] != 4 || d.written[1] != 4 {
		t.Errorf("config writes seen by the model: %v", d.written)
	}
}

// readCounter is a model whose dword at 0x40 counts the reads of it, as a
// register that moves on its own would.
type readCounter struct {
	cfgOnly
	n uint32
}

func (d *readCounter) ConfigRead(off, size int) {
	if off&^3 == 0x40 {
		d.n++
		_ = d.c.Poke(0x40, 4, d.n)
	}
}

// A ConfigReadWatcher sees every config read before it is answered, and
// its Poke is what the read returns.
func TestConfigReadWatcher(t *testing.T) {
	b := NewBus()
	a := pci.Addr{Dev: 1}
	d := &readCounter{cfgOnly: cfgOnly{NewConfigSpace(0x8086, 0x1234, 0x0c0320, 0)}}
	if err := b.Add(a, d); err != nil {
		t.Fatal(err)
	}
	for want := uint32(1); want <= 3; want++ {
		if v, err := b.ReadConfig(a, 0x40, 4); err != nil || v != want {
			t.Fatalf("read %d of 0x40: %#x, %v", want, v, err)
		}
	}
	if v, _ := b.ReadConfig(a, 0x42, 2); v != 0 {
		t.Errorf("0x42 after a fourth read: %#x, want the count's upper half, 0", v)
	}
	if d.n != 4 {
		t.Errorf("the model saw %d reads, want 4", d.n)
	}
}
