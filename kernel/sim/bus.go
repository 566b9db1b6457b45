package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// Device is a device model on the simulated bus.
//
// The bus calls MMIORead, MMIOWrite, ConfigWritten and ConfigRead with
// the function's lock held, one at a time: a handler may DMA through its
// port, raise its IRQ and read its own ConfigSpace directly, but must not
// reach its own function through the Bus (config or Regs), which would
// wait on that lock.
type Device interface {
	Config() *ConfigSpace
	// MMIORead and MMIOWrite handle one access of size 4 or 8 at off in
	// BAR bar, inside the BAR and aligned to its size.
	MMIORead(bar int, off uint32, size int) uint64
	MMIOWrite(bar int, off uint32, size int, v uint64)
}

// ConfigWatcher is implemented by models that react to config writes
// (power state, MSI-X enable, function level reset). The bus calls it
// after the write, with the device's lock held.
type ConfigWatcher interface {
	ConfigWritten(off, size int, v uint32)
}

// ConfigReadWatcher is implemented by models whose config registers move
// on their own (firmware's semaphores): the bus calls it before each
// config read, with the device's lock held, so the model can Poke what
// the read returns.
type ConfigReadWatcher interface {
	ConfigRead(off, size int)
}

// Address windows firmware assigns BARs from.
const (
	mmio32Base = 0xc000_0000
	mmio32End  = 0xfec0_0000 // IOAPIC, VT-d and LAPIC live above
	mmio64Base = 0x80_0000_0000
	ioBase     = 0xc000
	ioEnd      = 0x1_0000
)

type slot struct {
	mu  sync.Mutex // serializes config and MMIO accesses to the model
	dev Device
	cfg *ConfigSpace
}

// Bus is a flat PCI segment: functions by address, config accesses
// answered from their ConfigSpace, MMIO dispatched to their models.
// Absent functions read all ones, as on hardware.
type Bus struct {
	mu     sync.RWMutex
	fns    map[pci.Addr]*slot
	next32 uint64
	next64 uint64
	nextIO uint64
}

// NewBus returns an empty bus.
func NewBus() *Bus {
	return &Bus{fns: make(map[pci.Addr]*slot), next32: mmio32Base, next64: mmio64Base, nextIO: ioBase}
}

// Add plugs d in at a. Like firmware, the bus assigns addresses to its BARs
// and enables memory and I/O decoding; bus mastering stays off.
func (b *Bus) Add(a pci.Addr, d Device) error {
	if a.Dev > 31 || a.Fn > 7 {
		return fmt.Errorf("sim bus: add %v: device or function number out of range", a)
	}
	if d == nil || d.Config() == nil {
		return fmt.Errorf("sim bus: add %v: no device or no config space", a)
	}
	cfg := d.Config()
	if err := cfg.Err(); err != nil {
		return fmt.Errorf("sim bus: add %v: %w", a, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.fns[a]; ok {
		return fmt.Errorf("sim bus: add %v: slot taken", a)
	}
	if err := b.assign(cfg); err != nil {
		return fmt.Errorf("sim bus: add %v: %w", a, err)
	}
	b.fns[a] = &slot{dev: d, cfg: cfg}
	return nil
}

// assign gives every BAR an address aligned to its size.
func (b *Bus) assign(cfg *ConfigSpace) error {
	cfg.mu.Lock()
	defer cfg.mu.Unlock()
	var cmd uint32
	type plan struct {
		i    int
		addr uint64
	}
	var plans []plan
	n32, n64, nio := b.next32, b.next64, b.nextIO
	for i := range cfg.nbars {
		kind, size, _ := cfg.bar(i)
		if kind == pci.BARNone {
			continue
		}
		align := func(p uint64) uint64 { return (p + size - 1) &^ (size - 1) }
		switch kind {
		case pci.BARIO:
			p := align(nio)
			if p+size > ioEnd {
				return fmt.Errorf("BAR %d: I/O space exhausted", i)
			}
			plans, nio = append(plans, plan{i, p}), p+size
			cmd |= CmdIO
		case pci.BARMem32:
			p := align(n32)
			if p+size > mmio32End {
				return fmt.Errorf("BAR %d: 32-bit MMIO space exhausted", i)
			}
			plans, n32 = append(plans, plan{i, p}), p+size
			cmd |= CmdMemory
		case pci.BARMem64:
			p := align(n64)
			plans, n64 = append(plans, plan{i, p}), p+size
			cmd |= CmdMemory
		}
	}
	for _, p := range plans {
		cfg.setBARAddr(p.i, p.addr)
	}
	b.next32, b.next64, b.nextIO = n32, n64, nio
	cfg.put(cfgCommand, 2, cfg.get(cfgCommand, 2)|cmd)
	return nil
}

func (b *Bus) slot(a pci.Addr) *slot {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.fns[a]
}

// Functions returns the addresses of every function on the bus, in
// segment, bus, device, function order.
func (b *Bus) Functions() []pci.Addr {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]pci.Addr, 0, len(b.fns))
	for a := range b.fns {
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y pci.Addr) int {
		return cmp.Or(cmp.Compare(x.Seg, y.Seg), cmp.Compare(x.Bus, y.Bus), cmp.Compare(x.Dev, y.Dev), cmp.Compare(x.Fn, y.Fn))
	})
	return out
}

// Device returns the model at a, or nil.
func (b *Bus) Device(a pci.Addr) Device {
	if s := b.slot(a); s != nil {
		return s.dev
	}
	return nil
}

// ReadConfig implements pci.Config.
func (b *Bus) ReadConfig(a pci.Addr, off, size int) (uint32, error) {
	if err := checkAccess(off, size); err != nil {
		return 0, fmt.Errorf("sim bus: %v: %w", a, err)
	}
	s := b.slot(a)
	if s == nil {
		return uint32(1<<(8*size) - 1), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.dev.(ConfigReadWatcher); ok {
		w.ConfigRead(off, size)
	}
	return s.cfg.Read(off, size)
}

// WriteConfig implements pci.Config. Writes to absent functions are
// dropped, as on hardware.
func (b *Bus) WriteConfig(a pci.Addr, off, size int, v uint32) error {
	if err := checkAccess(off, size); err != nil {
		return fmt.Errorf("sim bus: %v: %w", a, err)
	}
	s := b.slot(a)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cfg.Write(off, size, v); err != nil {
		return err
	}
	if w, ok := s.dev.(ConfigWatcher); ok {
		w.ConfigWritten(off, size, v)
	}
	return nil
}

// ErrNoDecode is wrapped when a BAR is absent or its decoding is off.
var ErrNoDecode = errors.New("BAR not decoded")

// Regs returns the register window of BAR bar of the function at a. Like
// hardware, it reads all ones and drops writes whenever the function's
// decoding is off or an access falls outside the BAR.
func (b *Bus) Regs(a pci.Addr, bar int) (kernel.Regs, error) {
	s := b.slot(a)
	if s == nil {
		return nil, fmt.Errorf("sim bus: regs of %v BAR %d: no such function", a, bar)
	}
	kind, size, _ := s.cfg.BAR(bar)
	switch {
	case kind == pci.BARNone:
		return nil, fmt.Errorf("sim bus: regs of %v BAR %d: %w: not implemented", a, bar, ErrNoDecode)
	case kind == pci.BARIO && !s.cfg.IOEnabled():
		return nil, fmt.Errorf("sim bus: regs of %v BAR %d: %w: COMMAND.IO is off", a, bar, ErrNoDecode)
	case kind != pci.BARIO && !s.cfg.MemoryEnabled():
		return nil, fmt.Errorf("sim bus: regs of %v BAR %d: %w: COMMAND.MEM is off", a, bar, ErrNoDecode)
	}
	return &window{s: s, bar: bar, size: size, io: kind == pci.BARIO}, nil
}

type window struct {
	s    *slot
	bar  int
	size uint64
	io   bool
}

func (w *window) decodes(off uint32, n int) bool {
	if uint64(off)+uint64(n) > w.size || off%uint32(n) != 0 {
		return false
	}
	if w.io {
		return w.s.cfg.IOEnabled()
	}
	return w.s.cfg.MemoryEnabled()
}

func (w *window) read(off uint32, n int) uint64 {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if !w.decodes(off, n) {
		return ^uint64(0)
	}
	return w.s.dev.MMIORead(w.bar, off, n)
}

func (w *window) write(off uint32, n int, v uint64) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.decodes(off, n) {
		w.s.dev.MMIOWrite(w.bar, off, n, v)
	}
}

func (w *window) Read32(off uint32) uint32     { return uint32(w.read(off, 4)) }
func (w *window) Read64(off uint32) uint64     { return w.read(off, 8) }
func (w *window) Write32(off uint32, v uint32) { w.write(off, 4, uint64(v)) }
func (w *window) Write64(off uint32, v uint64) { w.write(off, 8, v) }

// Bridge is a PCI-to-PCI bridge as firmware leaves it: a type 1 header
// with its bus numbers assigned and no registers of its own. The simulated
// segment is flat, so the bridge forwards nothing; it is there for
// enumeration to follow and for DMAR device scopes to walk through.
type Bridge struct{ cfg *ConfigSpace }

// Class code of a PCI-to-PCI bridge.
const classPCIBridge = 0x060400

// NewBridge returns a bridge on bus primary leading to buses secondary
// through subordinate.
func NewBridge(vendor, device uint16, primary, secondary, subordinate uint8) *Bridge {
	c := NewConfigSpace(vendor, device, classPCIBridge, 1)
	c.SetBridge(primary, secondary, subordinate)
	return &Bridge{cfg: c}
}

// Config implements Device.
func (b *Bridge) Config() *ConfigSpace { return b.cfg }

// MMIORead implements Device: a bridge has no BARs, so nothing decodes.
func (b *Bridge) MMIORead(bar int, off uint32, size int) uint64 { return ^uint64(0) }

// MMIOWrite implements Device; writes are dropped.
func (b *Bridge) MMIOWrite(bar int, off uint32, size int, v uint64) {}
