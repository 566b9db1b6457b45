// Package nicmodeltest is what the device models' tests share: a
// simulated machine with one model on its bus and a wire whose far end
// the test holds, and builders of the frames the tests send.
package nicmodeltest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// Model is a device model that plugs into a wire.
type Model interface {
	sim.Device
	Attach(p wire.Port)
}

// Bench is a machine with one model on its bus and a wire from the model
// to the test. The VT-d unit is present but off, so DMA addresses are
// physical; memory is coherent.
type Bench struct {
	T    testing.TB
	M    *sim.Machine
	Regs kernel.Regs // BAR0 through the bus
	Wire *wire.Wire  // the model at end A, the test at end B

	mu  sync.Mutex
	out [][]byte // frames the model sent
}

// Config says where the model goes and what the bench enables.
type Config struct {
	Addr pci.Addr
	IO   bool         // enable I/O space decoding besides memory space
	Wire wire.Options // the wire to the test
}

// Plug builds a bench around the model plug puts at c.Addr, with its
// memory space (and with c.IO its I/O space) and bus mastering enabled,
// and the model attached to the wire.
func Plug[N Model](t testing.TB, c Config, plug func(*sim.Machine, pci.Addr) (N, error)) (*Bench, N) {
	t.Helper()
	a := c.Addr
	m, err := sim.New(sim.Config{VTd: vtd.QEMU()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := plug(m, a)
	if err != nil {
		t.Fatal(err)
	}
	cmd := uint32(sim.CmdMemory | sim.CmdBusMaster)
	if c.IO {
		cmd |= sim.CmdIO
	}
	if err := m.Bus.WriteConfig(a, 4, 2, cmd); err != nil {
		t.Fatal(err)
	}
	regs, err := m.Bus.Regs(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := wire.New(c.Wire)
	if err != nil {
		t.Fatal(err)
	}
	b := &Bench{T: t, M: m, Regs: regs, Wire: wr}
	wr.B().Receive(func(f []byte) {
		b.mu.Lock()
		b.out = append(b.out, bytes.Clone(f))
		b.mu.Unlock()
	})
	n.Attach(wr.A())
	return b, n
}

// Alloc returns page-aligned memory of size bytes.
func (b *Bench) Alloc(size int) kernel.Region {
	reg, err := b.M.Mem.Alloc(size, kernel.PageSize)
	if err != nil {
		b.T.Fatal(err)
	}
	return reg
}

// Sent returns the frames the model sent since the last call.
func (b *Bench) Sent() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.out
	b.out = nil
	return out
}

// Inject puts frame f on the wire towards the model.
func (b *Bench) Inject(f []byte) { b.Wire.B().Send(f) }
