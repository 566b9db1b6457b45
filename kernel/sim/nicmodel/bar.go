package nicmodel

import "sync"

// ReadSplit serves a 4 or 8 byte read of a register BAR whose registers
// are 32 bits wide: an 8 byte read is two reads, low dword first.
func ReadSplit(read32 func(off uint32) uint32, off uint32, size int) uint64 {
	v := uint64(read32(off))
	if size == 8 {
		v |= uint64(read32(off+4)) << 32
	}
	return v
}

// WriteSplit is ReadSplit's counterpart for writes.
func WriteSplit(write32 func(off, v uint32), off uint32, size int, v uint64) {
	write32(off, uint32(v))
	if size == 8 {
		write32(off+4, uint32(v>>32))
	}
}

// I/O BAR registers: IOADDR selects a register of the memory BAR, IODATA
// reads or writes it.
const (
	IOAddr = 0x00
	IOData = 0x04
	IOSize = 32 // bytes of the I/O BAR
)

// IOWindow is the I/O BAR's indirect access to a register file.
type IOWindow struct {
	mu   sync.Mutex
	addr uint32
}

// Read serves an I/O BAR read at off, reading registers with read32.
func (w *IOWindow) Read(off uint32, read32 func(off uint32) uint32) uint64 {
	w.mu.Lock()
	a := w.addr
	w.mu.Unlock()
	switch off {
	case IOAddr:
		return uint64(a)
	case IOData:
		return uint64(read32(a))
	}
	return 0
}

// Write serves an I/O BAR write at off to a register file of size bytes,
// writing registers with write32.
func (w *IOWindow) Write(off, v, size uint32, write32 func(off, v uint32)) {
	w.mu.Lock()
	if off == IOAddr {
		w.addr = v &^ 3 % size
	}
	a := w.addr
	w.mu.Unlock()
	if off == IOData {
		write32(a, v)
	}
}

// NoBAR stands for a BAR a part does not have.
const NoBAR = -1

// BARs routes a model's BAR accesses (sim.Device's MMIORead and
// MMIOWrite): the register BAR, 32-bit registers with an 8-byte access
// split low dword first; and, where the part has them, the I/O BAR's
// window onto the registers and the MSI-X table.
type BARs struct {
	Regs, IO, MSIX int    // BAR numbers; NoBAR for one the part lacks
	Size           uint32 // bytes of the register file the I/O window reaches
	Read32         func(off uint32) uint32
	Write32        func(off, v uint32)
	Table          MSIXTable

	io IOWindow
}

// Read serves a read of size 4 or 8 at off in BAR bar; a BAR the part
// lacks reads all ones, as a bus does.
func (b *BARs) Read(bar int, off uint32, size int) uint64 {
	switch bar {
	case NoBAR:
	case b.Regs:
		return ReadSplit(b.Read32, off, size)
	case b.IO:
		return b.io.Read(off, b.Read32)
	case b.MSIX:
		return b.Table.Read(off, size)
	}
	return ^uint64(0)
}

// Write serves a write of size 4 or 8 at off in BAR bar; one to a BAR the
// part lacks goes nowhere.
func (b *BARs) Write(bar int, off uint32, size int, v uint64) {
	switch bar {
	case NoBAR:
	case b.Regs:
		WriteSplit(b.Write32, off, size, v)
	case b.IO:
		b.io.Write(off, uint32(v), b.Size, b.Write32)
	case b.MSIX:
		b.Table.Write(off, size, v)
	}
}
