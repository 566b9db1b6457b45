package sim

import (
	"fmt"
	"sync"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// Fixed addresses of the simulated machine, as on QEMU's q35.
const (
	VTdBase  = 0xfed90000 // the VT-d unit's register window
	ECAMBase = 0xb0000000 // the PCI Express ECAM window, buses 0..255
	ECAMSize = 256 << 20
)

// Config describes a machine.
type Config struct {
	VTd vtd.Config
	// NonCoherentDMA makes streaming (Pin'd) memory non-coherent: device
	// writes reach the CPU only at SyncForCPU, CPU writes reach devices
	// only at SyncForDevice.
	NonCoherentDMA bool
	// CheckOwnership makes coherent streaming memory take the syncs the
	// DMA layer would skip, to catch a device write to bytes synced for
	// the CPU and not handed back (Memory.SetCheckOwnership).
	// Non-coherent memory always checks.
	CheckOwnership bool
	// NoFlushCheck lets a non-coherent VT-d unit (VTd.Coherent false) see
	// table writes that were never flushed with FlushCache. By default it
	// sees only flushed ones, as hardware does.
	NoFlushCheck bool
	// Scoped adds VT-d units that translate only the functions their
	// device scope names, as on servers with a unit per root complex and
	// clients with one for the graphics device. The unit at VTdBase stays
	// the catch-all (INCLUDE_PCI_ALL) for every other function.
	Scoped []ScopedVTd
	// Reserved are memory regions the machine's firmware goes on using
	// for some devices' DMA (RMRRs in the DMAR, VT-d 8.4).
	Reserved []Reserved
}

// Reserved is a reserved memory region and the endpoints that use it.
type Reserved struct {
	Base, Limit uint64 // Limit: the last byte, inclusive
	Endpoints   []pci.Addr
}

// ScopedVTd is a VT-d unit with a device scope.
type ScopedVTd struct {
	Base uint64 // register window: page aligned, apart from every other unit's
	VTd  vtd.Config
	// Endpoints are functions the unit translates; Bridges bring every
	// bus below them too (secondary through subordinate, read from the
	// bridge's config space when a request arrives, as the root port
	// routes it).
	Endpoints []pci.Addr
	Bridges   []pci.Addr
}

// covers reports whether a request from the function at a reaches this
// unit.
func (s ScopedVTd) covers(a pci.Addr, bus *Bus) bool {
	for _, e := range s.Endpoints {
		if e == a {
			return true
		}
	}
	for _, b := range s.Bridges {
		if b == a {
			return true
		}
		if b.Seg != a.Seg {
			continue
		}
		sl := bus.slot(b)
		if sl == nil {
			continue
		}
		// The config space itself, not the bus: the requester may be
		// inside its own handler, holding its slot's lock.
		v, err := sl.cfg.Read(cfgPrimary, 4)
		if err != nil {
			continue
		}
		sec, sub := uint8(v>>8), uint8(v>>16)
		if sec != 0 && a.Bus >= sec && a.Bus <= sub {
			return true
		}
	}
	return false
}

// RemapUnit is one of the machine's VT-d units.
type RemapUnit struct {
	Base  uint64
	Unit  *vtd.Unit
	IRQ   *IRQ      // its fault event interrupt
	Scope ScopedVTd // nil Endpoints and Bridges for the catch-all unit
}

// Machine is memory, clock, PCI bus and VT-d units wired together. VTd
// is the catch-all unit at VTdBase; Units lists the scoped ones too.
type Machine struct {
	Mem   *Memory
	Clock *Clock
	Bus   *Bus
	VTd   *vtd.Unit

	cfg    Config
	err    error
	vtdIRQ *IRQ
	scoped []RemapUnit
	dma    dmaCounters

	lapic *lapic

	mu   sync.Mutex
	irqs map[pci.Addr]*IRQ
}

// New returns a machine, or an error if cfg cannot be built.
func New(cfg Config) (*Machine, error) {
	m := &Machine{
		Mem:   NewMemory(),
		Clock: NewClock(),
		Bus:   NewBus(),
		cfg:   cfg,
		irqs:  make(map[pci.Addr]*IRQ),
	}
	m.lapic = &lapic{clock: m.Clock, vecs: map[uint8]*Vector{}}
	m.Mem.SetCoherent(!cfg.NonCoherentDMA)
	m.Mem.SetCheckOwnership(cfg.CheckOwnership)
	tracking := !cfg.VTd.Coherent
	for _, s := range cfg.Scoped {
		tracking = tracking || !s.VTd.Coherent
	}
	m.Mem.SetFlushTracking(tracking && !cfg.NoFlushCheck)
	u, irq, err := m.newUnit(cfg.VTd)
	if err != nil {
		return nil, fmt.Errorf("sim machine: %w", err)
	}
	m.VTd, m.vtdIRQ = u, irq
	bases := map[uint64]bool{VTdBase: true}
	for i, s := range cfg.Scoped {
		if s.Base == 0 || s.Base%kernel.PageSize != 0 || bases[s.Base] {
			return nil, fmt.Errorf("sim machine: scoped VT-d unit %d: register base %#x not a free page", i, s.Base)
		}
		bases[s.Base] = true
		u, irq, err := m.newUnit(s.VTd)
		if err != nil {
			return nil, fmt.Errorf("sim machine: scoped VT-d unit %d at %#x: %w", i, s.Base, err)
		}
		m.scoped = append(m.scoped, RemapUnit{Base: s.Base, Unit: u, IRQ: irq, Scope: s})
	}
	return m, nil
}

// newUnit builds a VT-d unit on the machine's memory. A coherent unit
// snoops the CPU caches and walks the device view; a non-coherent one sees
// only what FlushCache wrote back (when flush tracking is on).
func (m *Machine) newUnit(cfg vtd.Config) (*vtd.Unit, *IRQ, error) {
	var mem vtd.Memory = m.Mem.TableView()
	if cfg.Coherent {
		mem = m.Mem
	}
	u, err := vtd.New(cfg, mem)
	if err != nil {
		return nil, nil, err
	}
	u.SetQueueMemory(m.Mem)
	irq := NewIRQ(m.Clock)
	u.SetFaultNotify(irq.Raise)
	return u, irq, nil
}

// NewMachine returns a machine. A VT-d configuration the model cannot
// build is replaced by QEMU's defaults, and the reason kept in Err.
func NewMachine(cfg Config) *Machine {
	m, err := New(cfg)
	if err == nil {
		return m
	}
	cfg.VTd = vtd.QEMU()
	m, _ = New(cfg) // QEMU's configuration always builds
	m.err = err
	return m
}

// Err returns why NewMachine could not build the configuration it was
// given, or nil.
func (m *Machine) Err() error { return m.err }

// VTdRegs returns the catch-all VT-d unit's register window.
func (m *Machine) VTdRegs() kernel.Regs { return m.VTd }

// Units returns every VT-d unit: the scoped ones in configuration order,
// then the catch-all at VTdBase, as the DMAR table lists them.
func (m *Machine) Units() []RemapUnit {
	out := append([]RemapUnit(nil), m.scoped...)
	return append(out, RemapUnit{Base: VTdBase, Unit: m.VTd, IRQ: m.vtdIRQ})
}

// UnitRegs returns the register window of the VT-d unit at base.
func (m *Machine) UnitRegs(base uint64) (kernel.Regs, error) {
	for _, r := range m.Units() {
		if r.Base == base {
			return r.Unit, nil
		}
	}
	return nil, fmt.Errorf("sim machine: no VT-d unit at %#x", base)
}

// unitFor returns the unit that translates requests of the function at
// a: the first scoped unit covering it, else the catch-all.
func (m *Machine) unitFor(a pci.Addr) *vtd.Unit {
	for _, r := range m.scoped {
		if r.Scope.covers(a, m.Bus) {
			return r.Unit
		}
	}
	return m.VTd
}

// VTdIRQ is the VT-d unit's fault event interrupt.
func (m *Machine) VTdIRQ() *IRQ { return m.vtdIRQ }

// IRQ returns the interrupt of the function at a: models Raise it (MSI,
// MSI-X) or drive its INTx level, drivers Wait on it.
func (m *Machine) IRQ(a pci.Addr) *IRQ {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.irqs[a]
	if !ok {
		q = newFuncIRQ(m.Clock, m.Bus, a)
		q.message = func(addr uint64, data uint32) { m.message(a, addr, data) }
		m.irqs[a] = q
	}
	return q
}

// Port returns the DMA port of the function at a.
func (m *Machine) Port(a pci.Addr) *DMAPort {
	return &DMAPort{m: m, a: a, source: requesterID(a)}
}

// requesterID is the function's PCI requester id, as its DMA and
// interrupt requests carry it: bus<<8 | dev<<3 | fn.
func requesterID(a pci.Addr) uint16 {
	return uint16(a.Bus)<<8 | uint16(a.Dev&0x1f)<<3 | uint16(a.Fn&7)
}

// ECAM returns the ECAM window described by MCFG: a register window whose
// offset bus<<20 | dev<<15 | fn<<12 | reg reaches config space.
func (m *Machine) ECAM() kernel.Regs { return ecam{m.Bus} }

type ecam struct{ bus *Bus }

func (e ecam) decode(off uint32) (pci.Addr, int) {
	return pci.Addr{Bus: uint8(off >> 20), Dev: uint8(off >> 15 & 0x1f), Fn: uint8(off >> 12 & 7)}, int(off & 0xfff)
}

func (e ecam) Read32(off uint32) uint32 {
	a, reg := e.decode(off)
	v, err := e.bus.ReadConfig(a, reg, 4)
	if err != nil {
		return ^uint32(0) // unaligned: the access completes with all ones
	}
	return v
}

func (e ecam) Write32(off uint32, v uint32) {
	a, reg := e.decode(off)
	_ = e.bus.WriteConfig(a, reg, 4, v) // an unaligned write is dropped
}

func (e ecam) Read64(off uint32) uint64 {
	return uint64(e.Read32(off)) | uint64(e.Read32(off+4))<<32
}

func (e ecam) Write64(off uint32, v uint64) {
	e.Write32(off, uint32(v))
	e.Write32(off+4, uint32(v>>32))
}

// The machine's parts are the platform contract's implementations.
var (
	_ kernel.Memory = (*Memory)(nil)
	_ kernel.Clock  = (*Clock)(nil)
	_ kernel.Waiter = (*IRQ)(nil)
	_ kernel.Regs   = (*vtd.Unit)(nil)
	_ kernel.Regs   = ecam{}
	_ pci.Config    = (*Bus)(nil)
)
