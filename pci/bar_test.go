package pci

import (
	"strings"
	"testing"
)

var fnA = Addr{Bus: 0, Dev: 2}

func TestReadBARsSizing(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fakeFn)
		want  []BAR // present BARs; every other slot must be BARNone
	}{
		{"mem32", func(f *fakeFn) { f.bar(0, BARMem32, 0x20000, 0xfebc0000, false) },
			[]BAR{{Index: 0, Kind: BARMem32, Addr: 0xfebc0000, Size: 0x20000}}},
		{"mem64 prefetchable above 4 GiB", func(f *fakeFn) { f.bar(2, BARMem64, 0x4000, 0x8_0000_0000, true) },
			[]BAR{{Index: 2, Kind: BARMem64, Addr: 0x8_0000_0000, Size: 0x4000, Prefetchable: true}}},
		{"mem64 of 8 GiB", func(f *fakeFn) { f.bar(0, BARMem64, 8<<30, 0x40_0000_0000, true) },
			[]BAR{{Index: 0, Kind: BARMem64, Addr: 0x40_0000_0000, Size: 8 << 30, Prefetchable: true}}},
		{"io", func(f *fakeFn) { f.bar(4, BARIO, 0x20, 0xc040, false) },
			[]BAR{{Index: 4, Kind: BARIO, Addr: 0xc040, Size: 0x20}}},
		{"io with a 16-bit decoder", func(f *fakeFn) {
			f.bar(1, BARIO, 0x100, 0xe000, false)
			f.mask(RegBAR0+4, 4, 0xff00) // upper 16 bits read as zero
		}, []BAR{{Index: 1, Kind: BARIO, Addr: 0xe000, Size: 0x100}}},
		{"all six", func(f *fakeFn) {
			f.bar(0, BARMem64, 0x100000, 0xfe000000, false)
			f.bar(2, BARIO, 0x8, 0x1000, false)
			f.bar(3, BARMem32, 0x1000, 0xfd000000, true)
			f.bar(4, BARMem64, 0x10000, 0x1_0000_0000, true)
		}, []BAR{
			{Index: 0, Kind: BARMem64, Addr: 0xfe000000, Size: 0x100000},
			{Index: 2, Kind: BARIO, Addr: 0x1000, Size: 0x8},
			{Index: 3, Kind: BARMem32, Addr: 0xfd000000, Size: 0x1000, Prefetchable: true},
			{Index: 4, Kind: BARMem64, Addr: 0x1_0000_0000, Size: 0x10000, Prefetchable: true},
		}},
		{"zero size is absent", func(f *fakeFn) {
			f.put(RegBAR0, 4, 0) // implemented as read-only zero
			f.put(RegBAR0+4, 4, barMemType64|barPrefetch)
		}, nil},
		{"legacy below-1MiB type decodes as mem32", func(f *fakeFn) {
			f.bar(0, BARMem32, 0x10, 0xd0000, false)
			f.put(RegBAR0, 4, 0xd0000|barMemType1M)
		}, []BAR{{Index: 0, Kind: BARMem32, Addr: 0xd0000, Size: 0x10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := newFakeBus()
			f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
			tt.setup(f)
			f.put(RegCommand, 2, CmdMemory|CmdIO|CmdBusMaster)
			before := f.cfg

			bars, err := ReadBARs(bus, fnA, true)
			if err != nil {
				t.Fatal(err)
			}
			want := [6]BAR{}
			for i := range want {
				want[i].Index = i
			}
			for _, b := range tt.want {
				want[b.Index] = b
			}
			if bars != want {
				t.Errorf("bars:\n got %v\nwant %v", bars, want)
			}
			// Decoding was off for every BAR write, and everything was put back.
			for i, cmd := range f.cmdAtBARWrite {
				if cmd&(CmdMemory|CmdIO) != 0 {
					t.Errorf("BAR write %d happened with COMMAND %#x: decoding still on", i, cmd)
				}
			}
			if f.cfg != before {
				t.Errorf("config space not restored after sizing")
			}
		})
	}
}

func TestReadBARsKeepsDecodingOff(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
	f.bar(0, BARMem32, 0x1000, 0xfe000000, false)
	if _, err := ReadBARs(bus, fnA, true); err != nil {
		t.Fatal(err)
	}
	// With decoding already off, sizing must not touch COMMAND at all.
	if got := f.get(RegCommand, 2); got != 0 {
		t.Errorf("COMMAND = %#x after sizing, want 0", got)
	}
	// Two writes per BAR slot (all ones, then the old value) and no others.
	if f.writes != 12 || len(f.cmdAtBARWrite) != 12 {
		t.Errorf("%d config writes, %d of them to BARs; want 12, all to BARs", f.writes, len(f.cmdAtBARWrite))
	}
}

func TestReadBARsNoSizingWritesNothing(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
	f.bar(0, BARMem64, 0x20000, 0x40_0000_0000, false)
	f.bar(2, BARIO, 0x20, 0xc000, false)
	f.put(RegCommand, 2, CmdMemory|CmdIO)
	bars, err := ReadBARs(bus, fnA, false)
	if err != nil {
		t.Fatal(err)
	}
	if f.writes != 0 {
		t.Errorf("%d config writes without sizing", f.writes)
	}
	want := [6]BAR{
		{Index: 0, Kind: BARMem64, Addr: 0x40_0000_0000},
		{Index: 1},
		{Index: 2, Kind: BARIO, Addr: 0xc000},
		{Index: 3}, {Index: 4}, {Index: 5},
	}
	if bars != want {
		t.Errorf("bars:\n got %v\nwant %v", bars, want)
	}
}

func TestReadBARsBridge(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, newFakeFn(0x8086, 0x244e, 0x060400, HeaderBridge))
	f.bar(0, BARMem32, 0x1000, 0xfe000000, false)
	f.put(RegPrimaryBus, 4, 0x00050400) // bus numbers sit where BAR2 would
	bars, err := ReadBARs(bus, fnA, true)
	if err != nil {
		t.Fatal(err)
	}
	if bars[0].Size != 0x1000 || bars[2].Kind != BARNone {
		t.Errorf("bridge bars %v", bars)
	}
	if got := f.get(RegPrimaryBus, 4); got != 0x00050400 {
		t.Errorf("bus numbers changed to %#x by BAR sizing", got)
	}
}

func TestReadBARsBad(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fakeFn)
		want  string
		keep  BAR // a good BAR that must still be returned
	}{
		{"64-bit in last slot", func(f *fakeFn) {
			f.put(RegBAR0+20, 4, barMemType64)
			f.mask(RegBAR0+20, 4, 0xfffff000)
		}, "64-bit BAR in the last slot", BAR{Index: 0, Kind: BARMem32, Addr: 0xfe000000, Size: 0x1000}},
		{"reserved type", func(f *fakeFn) { f.put(RegBAR0+8, 4, 0x6) }, "reserved memory type",
			BAR{Index: 0, Kind: BARMem32, Addr: 0xfe000000, Size: 0x1000}},
		{"all ones", func(f *fakeFn) { f.put(RegBAR0+12, 4, 0xffffffff) }, "reads all ones",
			BAR{Index: 0, Kind: BARMem32, Addr: 0xfe000000, Size: 0x1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := newFakeBus()
			f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
			f.bar(0, BARMem32, 0x1000, 0xfe000000, false)
			tt.setup(f)
			f.put(RegCommand, 2, CmdMemory)
			bars, err := ReadBARs(bus, fnA, true)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if bars[0] != tt.keep {
				t.Errorf("good BAR lost: %v", bars[0])
			}
			if got := f.get(RegCommand, 2); got != CmdMemory {
				t.Errorf("COMMAND %#x after failed sizing, want %#x restored", got, CmdMemory)
			}
		})
	}
}

// A COMMAND restore that fails must be reported, not lost.
func TestReadBARsReportsRestoreFailure(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
	f.bar(0, BARMem32, 0x1000, 0xfe000000, false)
	f.put(RegCommand, 2, CmdMemory)
	c := &failingWrites{Config: bus, failOff: RegCommand, failAfter: 1}
	_, err := ReadBARs(c, fnA, true)
	if err == nil || !strings.Contains(err.Error(), "restoring command") {
		t.Fatalf("error %v, want the failed COMMAND restore", err)
	}
}

// failingWrites fails writes to failOff after failAfter of them succeeded.
type failingWrites struct {
	Config
	failOff   int
	failAfter int
}

func (c *failingWrites) WriteConfig(a Addr, off, size int, v uint32) error {
	if off == c.failOff {
		if c.failAfter == 0 {
			return errInjected
		}
		c.failAfter--
	}
	return c.Config.WriteConfig(a, off, size, v)
}

var errInjected = &injectedError{}

type injectedError struct{}

func (*injectedError) Error() string { return "injected failure" }

// TestBARMappable: only a memory BAR with a size is a window to map.
func TestBARMappable(t *testing.T) {
	for _, c := range []struct {
		b    BAR
		want bool
	}{
		{BAR{Kind: BARMem32, Addr: 0x40000000, Size: 0x20000}, true},
		{BAR{Kind: BARMem64, Addr: 0x40040000, Size: 0x4000}, true},
		{BAR{Kind: BARMem32, Addr: 0x40000000}, false},
		{BAR{Kind: BARIO, Addr: 0xc000, Size: 0x20}, false},
		{BAR{}, false},
	} {
		if got := c.b.Mappable(); got != c.want {
			t.Errorf("%+v: Mappable %v, want %v", c.b, got, c.want)
		}
	}
}
