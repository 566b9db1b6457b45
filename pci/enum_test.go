package pci

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func bridgeFn(primary, secondary, subordinate uint8) *fakeFn {
	f := newFakeFn(0x8086, 0x244e, 0x060400, HeaderBridge)
	f.put(RegPrimaryBus, 4, uint32(primary)|uint32(secondary)<<8|uint32(subordinate)<<16)
	return f
}

// topology: a host bridge, a bridge to bus 1 holding a second bridge to
// bus 2, a multi-function device with a gap at function 2, a single-function
// device that answers on every function number (as some do), and a device
// on bus 7 that no bridge leads to.
func topology() *fakeBus {
	bus := newFakeBus()
	bus.add(Addr{Dev: 0}, newFakeFn(0x8086, 0x29c0, 0x060000, HeaderNormal))
	bus.add(Addr{Dev: 1}, bridgeFn(0, 1, 2))
	bus.add(Addr{Bus: 1, Dev: 0}, bridgeFn(1, 2, 2))
	bus.add(Addr{Bus: 2, Dev: 3}, nicFn())
	mf := newFakeFn(0x8086, 0x10c9, 0x020000, HeaderNormal|HeaderMultiFunct)
	mf.bar(0, BARMem64, 0x20000, 0xfe000000, false)
	bus.add(Addr{Dev: 4, Fn: 0}, mf)
	bus.add(Addr{Dev: 4, Fn: 1}, newFakeFn(0x8086, 0x10c9, 0x020000, HeaderNormal|HeaderMultiFunct))
	bus.add(Addr{Dev: 4, Fn: 3}, newFakeFn(0x8086, 0x10c9, 0x020000, HeaderNormal|HeaderMultiFunct))
	bus.add(Addr{Dev: 5, Fn: 0}, newFakeFn(0x8086, 0x100e, 0x020000, HeaderNormal))
	bus.add(Addr{Dev: 5, Fn: 1}, newFakeFn(0x8086, 0x100e, 0x020000, HeaderNormal)) // ghost: no MF bit
	bus.add(Addr{Bus: 7, Dev: 0}, newFakeFn(0x8086, 0x15f3, 0x020000, HeaderNormal))
	return bus
}

func addrs(fns []*Function) []Addr {
	var as []Addr
	for _, f := range fns {
		as = append(as, f.Addr)
	}
	return as
}

func TestEnumerate(t *testing.T) {
	fns, err := Enumerate(topology(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Addr{{Dev: 0}, {Dev: 1}, {Dev: 4}, {Dev: 4, Fn: 1}, {Dev: 4, Fn: 3}, {Dev: 5}, {Bus: 1}, {Bus: 2, Dev: 3}}
	if got := addrs(fns); !slices.Equal(got, want) {
		t.Fatalf("found %v\nwant %v", got, want)
	}
	br := fns[1]
	if !br.IsBridge() || br.Primary != 0 || br.Secondary != 1 || br.Subordinate != 2 || br.Class != 0x060400 {
		t.Errorf("bridge %+v", br)
	}
	nic := fns[7]
	if nic.Vendor != 0x8086 || nic.Device != 0x10d3 || nic.Class != 0x020000 || nic.Revision != 1 || nic.Header != HeaderNormal {
		t.Errorf("nic ids %+v", nic)
	}
	if nic.BARs[0].Size != 0x20000 || len(nic.Caps) != 6 {
		t.Errorf("nic bars %v caps %v", nic.BARs, nic.Caps)
	}
	if fns[2].BARs[0].Kind != BARMem64 || fns[2].BARs[0].Size != 0x20000 {
		t.Errorf("multi-function device bar0 %v", fns[2].BARs[0])
	}

	all, err := Enumerate(topology(), Options{AllBuses: true})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, Addr{Bus: 7})
	if got := addrs(all); !slices.Equal(got, want) {
		t.Fatalf("all buses: found %v\nwant %v", got, want)
	}
}

func TestEnumerateBadBridges(t *testing.T) {
	tests := []struct {
		name  string
		setup func(b *fakeBus)
		want  string
	}{
		{"secondary not below", func(b *fakeBus) { b.add(Addr{Bus: 2, Dev: 9}, bridgeFn(2, 1, 1)) }, "not below its own bus"},
		{"subordinate below secondary", func(b *fakeBus) { b.add(Addr{Bus: 2, Dev: 9}, bridgeFn(2, 5, 4)) }, "subordinate bus 04 below secondary 05"},
		{"two bridges to one bus", func(b *fakeBus) { b.add(Addr{Dev: 9}, bridgeFn(0, 2, 2)) }, "reached twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := topology()
			tt.setup(bus)
			fns, err := Enumerate(bus, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			// Everything reachable is still reported.
			if len(fns) < 8 {
				t.Errorf("only %d functions kept", len(fns))
			}
		})
	}
}

func TestEnumerateUnnumberedBridge(t *testing.T) {
	bus := newFakeBus()
	bus.add(Addr{Dev: 1}, bridgeFn(0, 0, 0))
	bus.add(Addr{Bus: 1}, nicFn())
	fns, err := Enumerate(bus, Options{})
	if err != nil || len(fns) != 1 {
		t.Fatalf("unnumbered bridge: %v, %v", addrs(fns), err)
	}
}

func TestProbeAbsent(t *testing.T) {
	bus := newFakeBus()
	for _, id := range []uint32{0xffffffff, 0, 0xffff0000, 0x0000ffff} {
		f := newFakeFn(0, 0, 0, HeaderNormal)
		f.put(RegVendorID, 4, id)
		bus.add(fnA, f)
		if fn, err := Probe(bus, fnA, Options{}); !errors.Is(err, ErrAbsent) || fn != nil {
			t.Errorf("id %#x: %v, %v", id, fn, err)
		}
	}
	if fn, err := Probe(bus, Addr{Bus: 3}, Options{}); !errors.Is(err, ErrAbsent) || fn != nil {
		t.Errorf("empty slot: %v, %v", fn, err)
	}
}

func TestProbePartial(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, nicFn())
	f.put(RegBAR0+4, 4, 0x6) // reserved type in bar1
	fn, err := Probe(bus, fnA, Options{})
	if err == nil || !strings.Contains(err.Error(), "bar1") {
		t.Fatalf("error %v, want one about bar1", err)
	}
	if fn == nil || fn.BARs[0].Size != 0x20000 || len(fn.Caps) != 6 {
		t.Fatalf("partial function lost what could be read: %+v", fn)
	}
	// Enumeration keeps the function and reports its error.
	fns, err := Enumerate(bus, Options{})
	if len(fns) != 1 || err == nil {
		t.Errorf("enumerate kept %d functions, error %v", len(fns), err)
	}
}

// Enumeration through an accessor that cannot reach some buses (an ECAM
// window covering bus 0 only) skips them in all-buses mode and reports a
// bridge that leads out of reach.
func TestEnumerateOutOfReach(t *testing.T) {
	bus := topology()
	c := &busLimit{Config: bus, maxBus: 0}
	fns, err := Enumerate(c, Options{AllBuses: true})
	if err != nil || len(fns) != 6 {
		t.Errorf("all buses, bus 0 reachable: %v, %v", addrs(fns), err)
	}
	fns, err = Enumerate(c, Options{})
	if !errors.Is(err, ErrOutOfRange) || len(fns) != 6 {
		t.Errorf("following a bridge out of reach: %v, %v", addrs(fns), err)
	}
}

type busLimit struct {
	Config
	maxBus uint8
}

func (c *busLimit) ReadConfig(a Addr, off, size int) (uint32, error) {
	if a.Bus > c.maxBus {
		return 0, ErrOutOfRange
	}
	return c.Config.ReadConfig(a, off, size)
}
