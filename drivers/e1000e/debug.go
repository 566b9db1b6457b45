package e1000e

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// holer is an optional capability of a DMA view: IOVA space the device's
// domain leaves unmapped, so a device access there is refused by the
// IOMMU instead of landing in memory.
type holer interface {
	ReserveHole(size int) (kernel.DMAAddr, error)
	ReleaseHole(addr kernel.DMAAddr) error
}

// rxInject is the state of one debug inject-unmapped-rx: the hole and the
// descriptor that points into it. Guarded by rxMu.
type rxInject struct {
	hole    kernel.DMAAddr // 0: none reserved
	pending bool           // the next armed descriptor gets the hole
	desc    int            // the descriptor armed with it, -1 when none
}

// debugCtl runs a debug command:
//
//	inject-unmapped-rx   arm the next free RX descriptor with an IOVA the
//	                     domain does not map: the device's write of the
//	                     next frame there faults, and the driver must
//	                     notice, drop the frame and carry on
func (d *Device) debugCtl(arg string) error {
	switch arg {
	case "inject-unmapped-rx":
		return d.injectUnmappedRx()
	}
	return fmt.Errorf("e1000e %s: debug %q: want inject-unmapped-rx", d.name, arg)
}

func (d *Device) injectUnmappedRx() error {
	h, ok := d.dma.(holer)
	_, counts := d.dma.(faultCounter)
	if !ok || !counts {
		// Without translation the address would be physical memory.
		return fmt.Errorf("e1000e %s: debug inject-unmapped-rx: the DMA view has no IOMMU holes or fault count (translation off?)", d.name)
	}
	d.rxMu.Lock()
	defer d.rxMu.Unlock()
	if d.closed.Load() {
		return fmt.Errorf("e1000e %s: debug inject-unmapped-rx: device closed", d.name)
	}
	inj := &d.inject
	if inj.pending || inj.hole != 0 {
		return fmt.Errorf("e1000e %s: debug inject-unmapped-rx: one is already in flight", d.name)
	}
	hole, err := h.ReserveHole(rxBufSize)
	if err != nil {
		return fmt.Errorf("e1000e %s: debug inject-unmapped-rx: %w", d.name, err)
	}
	inj.hole, inj.pending, inj.desc = hole, true, -1
	return nil
}

// armRx writes descriptor i for a refill: the buffer's address, or the
// hole when an injection is pending. rxMu is held.
func (d *Device) armRx(i int, addr kernel.DMAAddr) {
	inj := &d.inject
	if !inj.pending {
		d.writeRx(i, addr)
		return
	}
	inj.pending, inj.desc = false, i
	// The slot's own buffer stays mapped and armed in the ring's view;
	// only the device is pointed elsewhere.
	d.writeRx(i, inj.hole)
	d.logf("%s: debug: rx descriptor %d armed with unmapped iova %#x", d.name, i, uint64(inj.hole))
}

// cleanedRx is told each descriptor the poll cleaned and ends an
// injection once its descriptor is back: the device is done with the
// hole, whose IOVA goes back to the allocator. rxMu is held.
func (d *Device) cleanedRx(i int) {
	inj := &d.inject
	if inj.desc != i || inj.hole == 0 {
		return
	}
	inj.desc = -1
	if h, ok := d.dma.(holer); ok {
		if err := h.ReleaseHole(inj.hole); err != nil {
			d.logf("%s: debug: %v", d.name, err)
			return // leaked, never reused: safer than a wrong free
		}
	}
	inj.hole = 0
}

// closeInject releases a hole still reserved when the device stops.
func (d *Device) closeInject() error {
	inj := &d.inject
	if inj.hole == 0 {
		return nil
	}
	h, _ := d.dma.(holer)
	if h == nil {
		return nil
	}
	hole := inj.hole
	*inj = rxInject{desc: -1}
	return h.ReleaseHole(hole)
}
