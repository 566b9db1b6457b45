package sim

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// ErrBusMasterOff is wrapped when a function DMAs with its bus master bit
// clear.
var ErrBusMasterOff = errors.New("bus master disabled")

// DMAStats counts the DMA requests of every port of a machine.
type DMAStats struct {
	Reads, Writes           uint64 // requests
	BytesRead, BytesWritten uint64 // bytes moved
	Faults                  uint64 // requests stopped by a translation fault
	Refused                 uint64 // requests refused: bus master off, no function
	MemoryErrors            uint64 // translated to unregistered memory
}

type dmaCounters struct {
	reads, writes, bytesRead, bytesWritten, faults, refused, memErrs atomic.Uint64
}

// DMAStats returns the machine's DMA counters.
func (m *Machine) DMAStats() DMAStats {
	c := &m.dma
	return DMAStats{
		Reads: c.reads.Load(), Writes: c.writes.Load(),
		BytesRead: c.bytesRead.Load(), BytesWritten: c.bytesWritten.Load(),
		Faults: c.faults.Load(), Refused: c.refused.Load(), MemoryErrors: c.memErrs.Load(),
	}
}

// DMAPort is a device model's only way to memory: each request is checked
// against the function's bus master bit and translated page by page, with
// the function's source id, by the VT-d unit whose scope holds it.
type DMAPort struct {
	m      *Machine
	a      pci.Addr
	source uint16
}

// Source returns the requester id the port's requests carry.
func (p *DMAPort) Source() uint16 { return p.source }

// Read reads len(b) bytes at DMA address addr.
func (p *DMAPort) Read(addr uint64, b []byte) error { return p.access(addr, b, false) }

// Write writes b at DMA address addr. A request that faults part way has
// written the pages before the fault, as hardware would.
func (p *DMAPort) Write(addr uint64, b []byte) error { return p.access(addr, b, true) }

func (p *DMAPort) access(addr uint64, b []byte, write bool) error {
	c := &p.m.dma
	op := "read"
	if write {
		op = "write"
		c.writes.Add(1)
	} else {
		c.reads.Add(1)
	}
	s := p.m.Bus.slot(p.a)
	if s == nil {
		c.refused.Add(1)
		return fmt.Errorf("sim dma: %v: %s at %#x: no such function", p.a, op, addr)
	}
	if !s.cfg.BusMaster() {
		c.refused.Add(1)
		return fmt.Errorf("sim dma: %v: %s of %d bytes at %#x: %w", p.a, op, len(b), addr, ErrBusMasterOff)
	}
	if addr+uint64(len(b)) < addr {
		c.refused.Add(1)
		return fmt.Errorf("sim dma: %v: %s of %d bytes at %#x: wraps the address space", p.a, op, len(b), addr)
	}
	unit := p.m.unitFor(p.a)
	for len(b) > 0 {
		n := min(len(b), int(kernel.PageSize-addr%kernel.PageSize))
		phys, err := unit.Translate(p.source, addr, write)
		if err != nil {
			c.faults.Add(1)
			return fmt.Errorf("sim dma: %v: %s at %#x: %w", p.a, op, addr, err)
		}
		if write {
			err = p.m.Mem.DeviceWrite(phys, b[:n])
		} else {
			err = p.m.Mem.DeviceRead(phys, b[:n])
		}
		if err != nil {
			c.memErrs.Add(1)
			return fmt.Errorf("sim dma: %v: %s at %#x (physical %#x): %w", p.a, op, addr, phys, err)
		}
		if write {
			c.bytesWritten.Add(uint64(n))
		} else {
			c.bytesRead.Add(uint64(n))
		}
		addr += uint64(n)
		b = b[n:]
	}
	return nil
}
