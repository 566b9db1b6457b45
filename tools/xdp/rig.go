package xdp

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// nicAddr is where the NIC sits on the simulated bus.
var nicAddr = pci.Addr{Bus: 0, Dev: 3, Fn: 0}

// Rig is the simulated machine: an 82576 (igb) or I225 (igc) behind VT-d,
// bound by its driver, its wire's far end played by the generator.
type Rig struct {
	Machine *sim.Machine
	Wire    *wire.Wire
	Unit    *iommu.Unit
	NIC     nic.NIC
	Binder  xsk.Binder

	peerRx atomic.Uint64 // frames the generator's end received
}

// NewRig builds the machine with the NIC the driver named ("" is igb)
// binds and brings it up.
func NewRig(driver string, logf func(string, ...any)) (*Rig, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()})
	if err := m.Err(); err != nil {
		return nil, fmt.Errorf("xdp: machine: %w", err)
	}
	w, err := wire.New(wire.Options{Clock: m.Clock})
	if err != nil {
		return nil, fmt.Errorf("xdp: wire: %w", err)
	}
	if err := plug(driver, m, nicAddr, w.A()); err != nil {
		return nil, err
	}
	unit, err := iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock})
	if err != nil {
		return nil, fmt.Errorf("xdp: iommu: %w", err)
	}
	res, err := probe.Bind(probe.Platform{
		Config: m.Bus,
		BAR:    func(f *pci.Function, bar int) (kernel.Regs, error) { return m.Bus.Regs(f.Addr, bar) },
		IOMMU:  unit,
		Memory: m.Mem,
		Clock:  m.Clock,
		IRQ:    func(f *pci.Function) kernel.Waiter { return m.IRQ(f.Addr) },
		Logf:   logf,
	})
	if err != nil {
		return nil, fmt.Errorf("xdp: probe: %w", err)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("xdp: probe: %w", err)
	}
	nics := res.NICs()
	if len(nics) != 1 {
		return nil, fmt.Errorf("xdp: %d NICs came up, want 1", len(nics))
	}
	b, ok := nics[0].(xsk.Binder)
	if !ok {
		nics[0].Close()
		return nil, errors.New("xdp: the NIC's driver offers no queue takeover")
	}
	r := &Rig{Machine: m, Wire: w, Unit: unit, NIC: nics[0], Binder: b}
	w.B().Receive(func([]byte) { r.peerRx.Add(1) })
	return r, nil
}

// PeerReceived is the number of frames the generator's end has received.
func (r *Rig) PeerReceived() uint64 { return r.peerRx.Load() }

// Stat returns one of the NIC's counters.
func (r *Rig) Stat(name string) (uint64, bool) {
	for _, s := range r.NIC.Stats() {
		if s.Name == name {
			return s.Value, true
		}
	}
	return 0, false
}

// Close shuts the NIC down and checks that nothing stayed mapped and no
// DMA faulted.
func (r *Rig) Close() error {
	err := r.NIC.Close()
	if f := r.Unit.Faults(); len(f) > 0 {
		err = errors.Join(err, fmt.Errorf("xdp: %d DMA faults, first %v", len(f), f[0]))
	}
	return err
}
