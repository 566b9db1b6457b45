package pci

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestConfigAddress(t *testing.T) {
	tests := []struct {
		a    Addr
		off  int
		want uint32
	}{
		{Addr{}, 0, 0x80000000},
		{Addr{Dev: 2}, 0x10, 0x80001010},
		{Addr{Bus: 0x12, Dev: 31, Fn: 7}, 0xfc, 0x8012fffc},
		{Addr{Bus: 0xff, Dev: 0x1f, Fn: 7}, 0xff, 0x80fffffc},
		{Addr{Bus: 1, Dev: 0, Fn: 1}, 0x0e, 0x8001010c},
	}
	for _, tt := range tests {
		if got := ConfigAddress(tt.a, tt.off); got != tt.want {
			t.Errorf("ConfigAddress(%v, %#x) = %#x, want %#x", tt.a, tt.off, got, tt.want)
		}
	}
}

// hostBridge models configuration mechanism #1 in front of a fakeBus: it
// latches CONFIG_ADDRESS on a 32-bit write to 0xcf8 and decodes data-port
// accesses at 0xcfc-0xcff. It fails the test on anything a real host
// bridge would mishandle: a narrow write to 0xcf8-0xcfb (0xcf9 resets the
// machine), a data access with the enable bit clear, or one crossing the
// dword.
type hostBridge struct {
	mu     sync.Mutex
	bus    *fakeBus
	addr   uint32
	faults []string
}

func (h *hostBridge) fault(format string, args ...any) {
	h.faults = append(h.faults, fmt.Sprintf(format, args...))
}

func (h *hostBridge) decode(port uint16, size int) (Addr, int, bool) {
	lane := int(port) - PortConfigData
	if lane < 0 || lane+size > 4 {
		h.fault("%d-byte access at port %#x", size, port)
		return Addr{}, 0, false
	}
	if h.addr&configEnable == 0 {
		h.fault("data access with CONFIG_ADDRESS %#x: enable bit clear", h.addr)
		return Addr{}, 0, false
	}
	a := Addr{Bus: uint8(h.addr >> 16), Dev: uint8(h.addr>>11) & 0x1f, Fn: uint8(h.addr>>8) & 7}
	return a, int(h.addr&0xfc) + lane, true
}

func (h *hostBridge) in(port uint16, size int) uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, off, ok := h.decode(port, size)
	if !ok {
		return sizeMask(size)
	}
	v, err := h.bus.ReadConfig(a, off, size)
	if err != nil {
		h.fault("read %v %#x: %v", a, off, err)
	}
	return v
}

func (h *hostBridge) out(port uint16, size int, v uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if port >= PortConfigAddress && port < PortConfigData {
		if port != PortConfigAddress || size != 4 {
			h.fault("%d-byte write of %#x to port %#x", size, v, port)
			return
		}
		h.addr = v
		return
	}
	a, off, ok := h.decode(port, size)
	if !ok {
		return
	}
	if err := h.bus.WriteConfig(a, off, size, v); err != nil {
		h.fault("write %v %#x: %v", a, off, err)
	}
}

func (h *hostBridge) In8(p uint16) uint8       { return uint8(h.in(p, 1)) }
func (h *hostBridge) In16(p uint16) uint16     { return uint16(h.in(p, 2)) }
func (h *hostBridge) In32(p uint16) uint32     { return h.in(p, 4) }
func (h *hostBridge) Out8(p uint16, v uint8)   { h.out(p, 1, uint32(v)) }
func (h *hostBridge) Out16(p uint16, v uint16) { h.out(p, 2, uint32(v)) }
func (h *hostBridge) Out32(p uint16, v uint32) { h.out(p, 4, v) }

func TestPortsEnumerate(t *testing.T) {
	direct := topology()
	direct.limit = ConfigSize
	want, err := Enumerate(direct, Options{NoSizing: true})
	if err != nil {
		t.Fatal(err)
	}

	bus := topology()
	bus.limit = ConfigSize
	hb := &hostBridge{bus: bus}
	got, err := Enumerate(NewPorts(hb), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hb.faults) > 0 {
		t.Fatalf("host bridge saw bad accesses: %v", hb.faults)
	}
	if !slices.Equal(addrs(got), addrs(want)) {
		t.Fatalf("through the ports: %v\ndirect: %v", addrs(got), addrs(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Vendor != w.Vendor || g.Device != w.Device || g.Class != w.Class || !slices.Equal(g.Caps, w.Caps) {
			t.Errorf("%v: through the ports %+v, direct %+v", g.Addr, g, w)
		}
		for j, b := range g.BARs {
			if b.Kind != w.BARs[j].Kind || b.Addr != w.BARs[j].Addr {
				t.Errorf("%v bar%d: %v, direct %v", g.Addr, j, b, w.BARs[j])
			}
		}
	}
	// Sized through the ports.
	nic := got[len(got)-1]
	if nic.BARs[0].Size != 0x20000 {
		t.Errorf("nic bar0 sized through the ports: %v", nic.BARs[0])
	}
}

func TestPortsWidths(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, nicFn())
	hb := &hostBridge{bus: bus}
	p := NewPorts(hb)
	for _, tt := range []struct{ off, size int }{{0, 4}, {2, 2}, {0x0e, 1}, {0x0b, 1}, {0x3d, 1}, {0x06, 2}} {
		got, err := p.ReadConfig(fnA, tt.off, tt.size)
		if err != nil {
			t.Fatal(err)
		}
		if want := f.get(tt.off, tt.size); got != want {
			t.Errorf("read %#x/%d = %#x, want %#x", tt.off, tt.size, got, want)
		}
	}
	f.mask(RegInterruptLine, 1, 0xff)
	if err := p.WriteConfig(fnA, RegInterruptLine, 1, 0x0b); err != nil {
		t.Fatal(err)
	}
	if f.cfg[RegInterruptLine] != 0x0b || f.cfg[RegInterruptPin] != 0 {
		t.Errorf("byte write landed wrong: line %#x pin %#x", f.cfg[RegInterruptLine], f.cfg[RegInterruptPin])
	}
	if len(hb.faults) > 0 {
		t.Fatalf("host bridge saw bad accesses: %v", hb.faults)
	}
}

func TestPortsBadAccess(t *testing.T) {
	p := NewPorts(&hostBridge{bus: newFakeBus()})
	tests := []struct {
		a         Addr
		off, size int
		want      error
	}{
		{Addr{Seg: 1}, 0, 4, ErrOutOfRange},
		{Addr{}, 0x100, 4, ErrOutOfRange},
		{Addr{}, 0xfe, 4, ErrBadAccess},
		{Addr{}, 1, 2, ErrBadAccess},
		{Addr{}, 0, 3, ErrBadAccess},
		{Addr{Dev: 32}, 0, 4, ErrBadAccess},
		{Addr{Fn: 8}, 0, 4, ErrBadAccess},
	}
	for _, tt := range tests {
		if _, err := p.ReadConfig(tt.a, tt.off, tt.size); !errors.Is(err, tt.want) {
			t.Errorf("read %v %#x/%d: %v, want %v", tt.a, tt.off, tt.size, err, tt.want)
		}
		if err := p.WriteConfig(tt.a, tt.off, tt.size, 0); !errors.Is(err, tt.want) {
			t.Errorf("write %v %#x/%d: %v, want %v", tt.a, tt.off, tt.size, err, tt.want)
		}
	}
	if err := p.WriteConfig(Addr{}, 0x3c, 1, 0x100); !errors.Is(err, ErrBadAccess) {
		t.Errorf("value wider than the access: %v", err)
	}
}

// The address/data pair is shared: concurrent readers must never see each
// other's CONFIG_ADDRESS.
func TestPortsConcurrent(t *testing.T) {
	bus := topology()
	bus.limit = ConfigSize
	p := NewPorts(&hostBridge{bus: bus})
	targets := []struct {
		a  Addr
		id uint32
	}{{Addr{Dev: 0}, 0x29c08086}, {Addr{Dev: 1}, 0x244e8086}, {Addr{Bus: 2, Dev: 3}, 0x10d38086}, {Addr{Dev: 5}, 0x100e8086}}
	var wg sync.WaitGroup
	errs := make(chan error, len(targets))
	for _, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				v, err := p.ReadConfig(tg.a, 0, 4)
				if err != nil || v != tg.id {
					errs <- fmt.Errorf("%v: read %#x, %v; want %#x", tg.a, v, err, tg.id)
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
