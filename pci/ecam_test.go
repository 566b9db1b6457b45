package pci

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel/acpi"
)

// memMapper hands out byte slices as physical memory, one per mapped
// address, and records the mappings asked for.
type memMapper struct {
	mem   map[uint64][]byte
	calls []uint64
	fail  error
	short bool
}

func (m *memMapper) Map(phys uint64, size int) ([]byte, error) {
	m.calls = append(m.calls, phys)
	if m.fail != nil {
		return nil, m.fail
	}
	if m.short {
		size /= 2
	}
	if m.mem == nil {
		m.mem = make(map[uint64][]byte)
	}
	if _, ok := m.mem[phys]; !ok {
		m.mem[phys] = make([]byte, size)
	}
	return m.mem[phys], nil
}

var testWindows = []acpi.MCFGAllocation{
	{Base: 0xb0000000, Segment: 0, StartBus: 0, EndBus: 1},
	{Base: 0xc0000000, Segment: 1, StartBus: 0x10, EndBus: 0x10},
}

func TestECAMAddressing(t *testing.T) {
	m := &memMapper{}
	e, err := NewECAM(testWindows, m)
	if err != nil {
		t.Fatal(err)
	}
	a := Addr{Bus: 1, Dev: 2, Fn: 3}
	if err := e.WriteConfig(a, 0x104, 4, 0xa1b2c3d4); err != nil {
		t.Fatal(err)
	}
	bus1 := m.mem[0xb0100000]
	if bus1 == nil {
		t.Fatalf("bus 1 not mapped at 0xb0100000; mappings %#x", m.calls)
	}
	off := 2<<15 | 3<<12 | 0x104
	if got := binary.LittleEndian.Uint32(bus1[off:]); got != 0xa1b2c3d4 {
		t.Errorf("dword at %#x = %#x", off, got)
	}
	for _, tt := range []struct {
		off, size int
		want      uint32
	}{{0x104, 4, 0xa1b2c3d4}, {0x106, 2, 0xa1b2}, {0x105, 1, 0xc3}} {
		if got, err := e.ReadConfig(a, tt.off, tt.size); err != nil || got != tt.want {
			t.Errorf("read %#x/%d = %#x, %v; want %#x", tt.off, tt.size, got, err, tt.want)
		}
	}
	if err := e.WriteConfig(a, 0x105, 1, 0x55); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteConfig(a, 0x106, 2, 0x6677); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(bus1[off:]); got != 0x667755d4 {
		t.Errorf("after narrow writes dword = %#x, want 0x667755d4", got)
	}

	// Base is bus 0's address even when the window starts at bus 0x10.
	if err := e.WriteConfig(Addr{Seg: 1, Bus: 0x10, Dev: 31, Fn: 7}, 0xffc, 4, 1); err != nil {
		t.Fatal(err)
	}
	if b := m.mem[0xc1000000]; b == nil || b[31<<15|7<<12|0xffc] != 1 {
		t.Errorf("segment 1 bus 0x10 not at 0xc1000000: mappings %#x", m.calls)
	}
	// Each bus is mapped once.
	e.ReadConfig(a, 0, 4)
	if want := []uint64{0xb0100000, 0xc1000000}; !slices.Equal(m.calls, want) {
		t.Errorf("mappings %#x, want %#x", m.calls, want)
	}
}

func TestECAMErrors(t *testing.T) {
	e, err := NewECAM(testWindows, &memMapper{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		a         Addr
		off, size int
		want      error
	}{
		{Addr{Bus: 2}, 0, 4, ErrOutOfRange},
		{Addr{Seg: 1, Bus: 0}, 0, 4, ErrOutOfRange},
		{Addr{Seg: 2}, 0, 4, ErrOutOfRange},
		{Addr{}, 0x1000, 4, ErrOutOfRange},
		{Addr{}, 0x102, 4, ErrBadAccess},
	} {
		if _, err := e.ReadConfig(tt.a, tt.off, tt.size); !errors.Is(err, tt.want) {
			t.Errorf("read %v %#x: %v, want %v", tt.a, tt.off, err, tt.want)
		}
	}
	if _, err := NewECAM(nil, &memMapper{}); err == nil {
		t.Error("no windows accepted")
	}
	if _, err := NewECAM(testWindows, nil); err == nil {
		t.Error("no mapper accepted")
	}
	denied := fmt.Errorf("operation not permitted")
	e, _ = NewECAM(testWindows, &memMapper{fail: denied})
	if _, err := e.ReadConfig(Addr{}, 0, 4); !errors.Is(err, denied) || !strings.Contains(err.Error(), "0xb0000000") {
		t.Errorf("mapper failure: %v", err)
	}
	e, _ = NewECAM(testWindows, &memMapper{short: true})
	if _, err := e.ReadConfig(Addr{}, 0, 4); err == nil || !strings.Contains(err.Error(), "mapper returned") {
		t.Errorf("short mapping: %v", err)
	}
}

// A function's bytes placed in ECAM memory enumerate like the function,
// extended capabilities included.
func TestECAMEnumerate(t *testing.T) {
	m := &memMapper{}
	e, err := NewECAM(testWindows[:1], m)
	if err != nil {
		t.Fatal(err)
	}
	bus0, _ := m.Map(0xb0000000, acpi.ECAMBusSize)
	nic := nicFn()
	copy(bus0[3<<15:], nic.cfg[:])
	m.calls = nil
	fns, err := Enumerate(e, Options{AllBuses: true, NoSizing: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) != 1 || fns[0].Addr != (Addr{Dev: 3}) || fns[0].Device != 0x10d3 {
		t.Fatalf("found %v", fns)
	}
	if _, ok := FindExtCap(fns[0].Caps, ExtCapDSN); !ok {
		t.Errorf("extended capabilities not reached through ECAM: %v", fns[0].Caps)
	}
	// Each bus of the window mapped once; buses outside it never.
	if want := []uint64{0xb0000000, 0xb0100000}; !slices.Equal(m.calls, want) {
		t.Errorf("mappings while enumerating %#x, want %#x", m.calls, want)
	}
}

// Accessors are shared by a driver's goroutines: lazy mappings and opened
// files must be safe under concurrent first use.
func TestAccessorsConcurrent(t *testing.T) {
	m := &memMapper{mem: map[uint64][]byte{}}
	for _, phys := range []uint64{0xb0000000, 0xb0100000} {
		b := make([]byte, acpi.ECAMBusSize)
		binary.LittleEndian.PutUint32(b[0:], uint32(phys>>20))
		m.mem[phys] = b
	}
	e, err := NewECAM(testWindows[:1], &lockedMapper{m: m})
	if err != nil {
		t.Fatal(err)
	}
	fns := map[Addr]*fakeFn{}
	for i := uint8(0); i < 4; i++ {
		f := newFakeFn(0x8086, uint16(i), 0x020000, HeaderNormal)
		fns[Addr{Dev: i}] = f
	}
	s := NewSysfs(sysfsTree(t, fns, nil, nil))
	defer s.Close()

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				bus := uint8((g + i) % 2)
				if v, err := e.ReadConfig(Addr{Bus: bus}, 0, 4); err != nil || v != 0xb00+uint32(bus) {
					errs <- fmt.Errorf("ecam bus %d: %#x, %v", bus, v, err)
					return
				}
				dev := uint8((g + i) % 4)
				if v, err := s.ReadConfig(Addr{Dev: dev}, RegDeviceID, 2); err != nil || v != uint32(dev) {
					errs <- fmt.Errorf("sysfs dev %d: %#x, %v", dev, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

type lockedMapper struct {
	mu sync.Mutex
	m  *memMapper
}

func (l *lockedMapper) Map(phys uint64, size int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.Map(phys, size)
}
