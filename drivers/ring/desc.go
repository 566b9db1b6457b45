// Package ring is the descriptor-ring and buffer machinery shared by the
// Intel drivers (e1000e, igb, igc): coherent descriptor memory, the RX
// buffer pool with its copybreak and recycling rules, and the TX slot
// bookkeeping that unmaps and releases buffers once the device is done.
// It knows nothing of any descriptor layout; drivers encode and decode
// their own descriptors in the bytes it hands out.
package ring

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// descAlign is the ring length granule of every Intel NIC: RDLEN and TDLEN
// must be multiples of 128 bytes.
const descAlign = 128

// Descs is a ring of fixed-size descriptors in coherent DMA memory.
type Descs struct {
	dma  kernel.DMA
	mem  kernel.Coherent
	size int
	n    int
}

// NewDescs allocates n descriptors of size bytes each.
func NewDescs(dma kernel.DMA, n, size int) (*Descs, error) {
	if n < 8 || size <= 0 || (n*size)%descAlign != 0 {
		return nil, fmt.Errorf("ring: %d descriptors of %d bytes: length must be a positive multiple of %d bytes", n, size, descAlign)
	}
	mem, err := dma.AllocCoherent(n * size)
	if err != nil {
		return nil, fmt.Errorf("ring: allocate %d descriptors: %w", n, err)
	}
	if len(mem.Buf) < n*size {
		dma.FreeCoherent(mem)
		return nil, fmt.Errorf("ring: coherent allocation returned %d bytes, want %d", len(mem.Buf), n*size)
	}
	return &Descs{dma: dma, mem: mem, size: size, n: n}, nil
}

// Len is the number of descriptors.
func (d *Descs) Len() int { return d.n }

// Bytes is the ring length in bytes (the value of RDLEN/TDLEN).
func (d *Descs) Bytes() int { return d.n * d.size }

// Addr is the ring's device address (RDBAL/RDBAH, TDBAL/TDBAH).
func (d *Descs) Addr() kernel.DMAAddr { return d.mem.Addr }

// At returns descriptor i's bytes.
func (d *Descs) At(i int) []byte {
	off := i * d.size
	return d.mem.Buf[off : off+d.size : off+d.size]
}

// Next returns the index after i, wrapping.
func (d *Descs) Next(i int) int {
	if i++; i == d.n {
		return 0
	}
	return i
}

// Clear zeroes every descriptor.
func (d *Descs) Clear() { clear(d.mem.Buf[:d.n*d.size]) }

// Free releases the ring memory. The device must no longer use it.
func (d *Descs) Free() error {
	if d.mem.Buf == nil {
		return nil
	}
	err := d.dma.FreeCoherent(d.mem)
	d.mem = kernel.Coherent{}
	if err != nil {
		return fmt.Errorf("ring: free descriptors: %w", err)
	}
	return nil
}

// Ring registers, as offsets from a queue's base-address-low register:
// every Intel gigabit queue lays them out the same way.
const (
	regBAH = 0x04
	regLEN = 0x08
	regH   = 0x10
	regT   = 0x18
)

// Program points the device's queue whose base-address-low register is
// bal at the ring: base address, length in bytes, head and tail zero.
func (d *Descs) Program(r kernel.Regs, bal uint32) {
	a := uint64(d.Addr())
	r.Write32(bal, uint32(a))
	r.Write32(bal+regBAH, uint32(a>>32))
	r.Write32(bal+regLEN, uint32(d.Bytes()))
	r.Write32(bal+regH, 0)
	r.Write32(bal+regT, 0)
}
