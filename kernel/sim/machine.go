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
	// NoFlushCheck lets a non-coherent VT-d unit (VTd.Coherent false) see
	// table writes that were never flushed with FlushCache. By default it
	// sees only flushed ones, as hardware does.
	NoFlushCheck bool
}

// Machine is memory, clock, PCI bus and VT-d unit wired together.
type Machine struct {
	Mem   *Memory
	Clock *Clock
	Bus   *Bus
	VTd   *vtd.Unit

	cfg    Config
	err    error
	vtdIRQ *IRQ
	dma    dmaCounters

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
	m.Mem.SetCoherent(!cfg.NonCoherentDMA)
	m.Mem.SetFlushTracking(!cfg.VTd.Coherent && !cfg.NoFlushCheck)
	u, err := vtd.New(cfg.VTd, m.Mem.TableView())
	if err != nil {
		return nil, fmt.Errorf("sim machine: %w", err)
	}
	u.SetQueueMemory(m.Mem)
	m.VTd = u
	m.vtdIRQ = NewIRQ(m.Clock)
	u.SetFaultNotify(m.vtdIRQ.Raise)
	return m, nil
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

// VTdRegs returns the VT-d unit's register window.
func (m *Machine) VTdRegs() kernel.Regs { return m.VTd }

// VTdIRQ is the VT-d unit's fault event interrupt.
func (m *Machine) VTdIRQ() *IRQ { return m.vtdIRQ }

// IRQ returns the interrupt line of the function at a: models Raise it,
// drivers Wait on it.
func (m *Machine) IRQ(a pci.Addr) *IRQ {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.irqs[a]
	if !ok {
		q = NewIRQ(m.Clock)
		m.irqs[a] = q
	}
	return q
}

// Port returns the DMA port of the function at a.
func (m *Machine) Port(a pci.Addr) *DMAPort {
	return &DMAPort{m: m, a: a, source: uint16(a.Bus)<<8 | uint16(a.Dev&0x1f)<<3 | uint16(a.Fn&7)}
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
