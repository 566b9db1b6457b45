package ring

import (
	"errors"
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// Holer is an optional capability of a kernel.DMA view: IOVA space the
// device's domain leaves unmapped, so a device access there is refused
// by the IOMMU instead of landing in memory.
type Holer interface {
	ReserveHole(size int) (kernel.DMAAddr, error)
	ReleaseHole(addr kernel.DMAAddr) error
}

// RxHole is one debug inject-unmapped-rx: a hole of unmapped IOVA and the
// RX descriptor the next refill arms with it, so that the device's write
// of the frame there faults. A driver keeps a *RxHole, nil unless one is
// armed, under its RX lock and looks at it only at refill and after the
// clean loop, never per frame.
type RxHole struct {
	h    Holer
	Addr kernel.DMAAddr
	Desc int // the descriptor armed with it, -1 until a refill arms one
}

// NewRxHole reserves size bytes of IOVA the device's domain does not map.
// It refuses a view without holes or without a fault count: without
// translation the address would be physical memory, and without the count
// the fault would go unseen.
func NewRxHole(dma kernel.DMA, size int) (*RxHole, error) {
	h, ok := dma.(Holer)
	_, counts := dma.(FaultCounter)
	if !ok || !counts {
		return nil, errors.New("the DMA view has no IOMMU holes or fault count (translation off?)")
	}
	addr, err := h.ReserveHole(size)
	if err != nil {
		return nil, err
	}
	return &RxHole{h: h, Addr: addr, Desc: -1}, nil
}

// Arm returns the address to write descriptor i with at a refill: the
// hole for the first descriptor after NewRxHole, addr after that. The
// slot's own buffer stays mapped and armed in the ring's view; only the
// device is pointed elsewhere.
func (h *RxHole) Arm(i int, addr kernel.DMAAddr) (kernel.DMAAddr, bool) {
	if h.Desc >= 0 {
		return addr, false
	}
	h.Desc = i
	return h.Addr, true
}

// Cleaned reports whether the armed descriptor is among the n a clean
// loop took from start on a ring of size descriptors: the device is done
// with the hole.
func (h *RxHole) Cleaned(start, n, size int) bool {
	if h.Desc < 0 || n <= 0 {
		return false
	}
	return (h.Desc-start+size)%size < n
}

// Release gives the hole's IOVA back to the allocator.
func (h *RxHole) Release() error {
	if err := h.h.ReleaseHole(h.Addr); err != nil {
		return fmt.Errorf("release rx hole %#x: %w", uint64(h.Addr), err)
	}
	return nil
}
