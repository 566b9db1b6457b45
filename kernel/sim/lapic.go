package sim

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// Interrupt messages (Intel SDM vol. 3, 11.11): a device's MSI or MSI-X
// message is a write of its data to an address in the local APIC's
// window, 0xfee00000-0xfeefffff, with the destination in address bits
// 19:12 and the vector in data bits 7:0. The machine has one processor,
// APIC ID 0; vectors below 0x20 are the processor's exceptions and
// those from 0xf0 the platform's own.
const (
	msiWindow     = 0xfee00000
	msiWindowMask = 0xfff00000
	firstVector   = 0x30
	lastVector    = 0xef
)

// ErrNoVector is returned when every vector is handed out.
var ErrNoVector = errors.New("no free interrupt vector")

// lapic is the machine's local APIC as messages reach it.
type lapic struct {
	clock   *Clock
	mu      sync.Mutex
	vecs    map[uint8]*Vector
	stray   atomic.Uint64 // messages to no vector handed out, or outside the window
	blocked atomic.Uint64 // messages the VT-d unit's interrupt remapping blocked
}

// Vector is one vector of the local APIC, handed to a driver for a
// device's MSI or MSI-X message: an edge line (Raise once per message)
// that its poll loop waits on. It is a kernel.MSI. Unlike a function's
// line, a vector's sleep lasts its whole timeout in real time unless a
// message ends it (SetRealWait can shorten it): a loop that sleeps on a
// vector for a minute, waiting for a link change, must not run the
// machine's clock on by a minute every millisecond.
type Vector struct {
	*IRQ
	vector uint8
	l      *lapic
}

var _ kernel.MSI = (*Vector)(nil)

// MSIAddress is the message address: the window, destination APIC 0,
// fixed delivery, physical destination mode.
func (v *Vector) MSIAddress() uint64 { return msiWindow }

// MSIData is the message data: the vector, edge-triggered.
func (v *Vector) MSIData() uint16 { return uint16(v.vector) }

// Vector is the interrupt vector.
func (v *Vector) Vector() uint8 { return v.vector }

// String names the vector on the console.
func (v *Vector) String() string { return fmt.Sprintf("sim vector %d", v.vector) }

// Close gives the vector back; messages to it count as stray after.
func (v *Vector) Close() error {
	v.l.mu.Lock()
	defer v.l.mu.Unlock()
	if v.l.vecs[v.vector] != v {
		return fmt.Errorf("sim lapic: vector %d closed twice", v.vector)
	}
	delete(v.l.vecs, v.vector)
	return nil
}

// MSI hands out a free vector of the machine's local APIC.
func (m *Machine) MSI() (kernel.MSI, error) { return m.Vector() }

// Vector is MSI as its concrete type, for tests that count a vector's
// interrupts or keep it asleep (SetRealWait).
func (m *Machine) Vector() (*Vector, error) {
	l := m.lapic
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := firstVector; n <= lastVector; n++ {
		if _, used := l.vecs[uint8(n)]; !used {
			v := &Vector{IRQ: NewIRQ(l.clock), vector: uint8(n), l: l}
			v.SetRealWait(math.MaxInt64)
			l.vecs[uint8(n)] = v
			return v, nil
		}
	}
	return nil, fmt.Errorf("sim lapic: %w", ErrNoVector)
}

// message carries the function at a's interrupt message to the local
// APIC. A write in the interrupt window is an interrupt request: the
// VT-d unit that covers the function remaps it first (VT-d 5.1), which
// passes it unchanged while remapping is off, rewrites it from its
// interrupt remapping table entry, or blocks it. Any other write goes
// on as it is, to count as stray.
func (m *Machine) message(a pci.Addr, addr uint64, data uint32) {
	if addr&msiWindowMask == msiWindow {
		out, d, ok := m.unitFor(a).Interrupt(requesterID(a), addr, data)
		if !ok {
			m.lapic.blocked.Add(1)
			return
		}
		addr, data = out, d
	}
	m.Message(addr, data)
}

// Message delivers an interrupt message as the local APIC receives it
// (after interrupt remapping): data written to addr. One to a vector
// handed out raises it; any other counts as stray.
func (m *Machine) Message(addr uint64, data uint32) {
	l := m.lapic
	if addr&msiWindowMask != msiWindow {
		l.stray.Add(1)
		return
	}
	l.mu.Lock()
	v := l.vecs[uint8(data)]
	l.mu.Unlock()
	if v == nil {
		l.stray.Add(1)
		return
	}
	v.Raise()
}

// StrayMessages counts the interrupt messages that raised no vector.
func (m *Machine) StrayMessages() uint64 { return m.lapic.stray.Load() }

// BlockedMessages counts the interrupt messages a VT-d unit's interrupt
// remapping blocked; they reached no vector and are not stray.
func (m *Machine) BlockedMessages() uint64 { return m.lapic.blocked.Load() }
