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

// RxInject is a queue's debug inject-unmapped-rx slot, guarded by the
// queue's RX lock. Its one value, the hole in flight, is nil unless an
// injection is armed: the receive path asks Writer once per poll and
// nothing per frame.
type RxInject struct {
	hole *RxHole
	name string                        // the queue's name in log lines
	logf func(format string, a ...any) // the driver's log
}

// Ctl runs the debug command arg, which must be inject-unmapped-rx, on
// a queue whose RX lock is held: busy says the queue is closed or holds a
// socket's frames. family and name begin its errors ("igb 0000:03:00.0").
func (j *RxInject) Ctl(arg string, busy bool, dma kernel.DMA, size int, family, name string, logf func(format string, a ...any)) error {
	if arg != "inject-unmapped-rx" {
		return fmt.Errorf("%s %s: debug %q: want inject-unmapped-rx", family, name, arg)
	}
	err := errors.New("the queue is closed or holds a socket's frames")
	if !busy {
		err = j.Start(dma, size, name, logf)
	}
	if err != nil {
		return fmt.Errorf("%s %s: debug %s: %w", family, name, arg, err)
	}
	return nil
}

// Start reserves size bytes of unmapped IOVA for the next refill to arm
// a descriptor with. name and logf say where the steps are logged.
func (j *RxInject) Start(dma kernel.DMA, size int, name string, logf func(format string, a ...any)) error {
	if j.hole != nil {
		return errors.New("one is already in flight")
	}
	h, err := NewRxHole(dma, size)
	if err != nil {
		return err
	}
	j.hole, j.name, j.logf = h, name, logf
	return nil
}

// Arm is the address a refill writes descriptor i with: the hole for the
// first descriptor after Start, addr otherwise.
func (j *RxInject) Arm(i int, addr kernel.DMAAddr) kernel.DMAAddr {
	a, armed := j.hole.Arm(i, addr)
	if armed {
		j.logf("%s: debug: rx descriptor %d armed with unmapped iova %#x", j.name, i, uint64(a))
	}
	return a
}

// Cleaned ends the injection once the clean loop, which took n
// descriptors from start on a ring of size, took its descriptor back:
// the device is done with the hole.
func (j *RxInject) Cleaned(start, n, size int) {
	if !j.hole.Cleaned(start, n, size) {
		return
	}
	if err := j.hole.Release(); err != nil {
		j.logf("%s: debug: %v", j.name, err)
		// Leaked, never reused: safer than a wrong free.
	}
	j.hole = nil
}

// Writer is what a refill after a clean loop that took n descriptors
// from start, on a ring of size, writes descriptors with: arm while an
// injection is armed, write otherwise. It ends an injection whose
// descriptor came back first.
func (j *RxInject) Writer(start, n, size int, write, arm func(int, kernel.DMAAddr)) func(int, kernel.DMAAddr) {
	if j.hole == nil {
		return write
	}
	if j.Cleaned(start, n, size); j.hole == nil {
		return write
	}
	return arm
}

// Close gives back a hole still reserved when the queue stops.
func (j *RxInject) Close() error {
	h := j.hole
	if h == nil {
		return nil
	}
	j.hole = nil
	return h.Release()
}
