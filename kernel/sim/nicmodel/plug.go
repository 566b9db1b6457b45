package nicmodel

import (
	"fmt"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// DMA is a model's only way to memory: bus-master reads and writes of
// device addresses. The simulated machine's DMA port implements it.
type DMA interface {
	Read(addr uint64, b []byte) error
	Write(addr uint64, b []byte) error
}

// Interrupt is a model's interrupt: Raise sends an edge (its one MSI, or
// a note that DMA about to happen will interrupt), SetLevel drives the
// function's INTx line (asserted while an enabled cause is pending, in
// the modes without MSI-X), Message sends an MSI-X table entry's message
// (MSIXTable).
type Interrupt interface {
	Raise()
	SetLevel(asserted bool)
	Messenger
}

// Plug builds a model with build and plugs it into machine m at a: its
// config space on the bus, its DMA through the machine's port (and so
// through the VT-d unit), its interrupt on the machine's line for a.
func Plug[D sim.Device](m *sim.Machine, a pci.Addr, family string, build func(DMA, Interrupt) (D, error)) (D, error) {
	d, err := build(m.Port(a), m.IRQ(a))
	if err != nil {
		var zero D
		return zero, err
	}
	if err := m.Bus.Add(a, d); err != nil {
		var zero D
		return zero, fmt.Errorf("%s: plug at %v: %w", family, a, err)
	}
	return d, nil
}

// AttachWire hands a model's receive path to port p and has its PHY follow
// the cable: through p's link reports when p makes them (wire.LinkPort),
// otherwise a partner at mbps, present from now on.
func AttachWire(p wire.Port, receive func(frame []byte), cable func(up bool, mbps int), mbps int) {
	p.Receive(receive)
	if lp, ok := p.(wire.LinkPort); ok {
		lp.Link(cable)
	} else {
		cable(true, mbps)
	}
}
