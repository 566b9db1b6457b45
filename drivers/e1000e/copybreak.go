package e1000e

import (
	"fmt"

	"github.com/ether9/ether9/drivers/ring"
)

// copybreakAuto measures, through the device's own DMA view, what copying
// a frame and handing its buffer up cost (ring.MeasureCopybreak) and sets
// the copybreak where they meet. It is the default behind an IOMMU, where
// the answer depends on the IOMMU's invalidation cost and the platform's
// cost of pinning memory; with untranslated DMA Linux's 256 stands. On a
// failed measurement the translated default (copy every frame) is kept.
// The queue's rxMu is held.
func (d *Device) copybreakAuto() error {
	c, err := ring.MeasureCopybreak(d.dma, rxBufSize)
	if err != nil {
		d.q.rx.SetCopybreak(TranslatedCopybreak)
		return fmt.Errorf("e1000e %s: copybreak auto: %w", d.name, err)
	}
	d.cbCosts.Store(&c)
	d.q.rx.SetCopybreak(min(c.Copybreak, maxCopybreak))
	return nil
}

// startCopybreak sets the copybreak a device starts with: auto behind an
// IOMMU (a DMA view that counts faults is a translated one), else
// DefaultCopybreak. The queue's rxMu is held, or the device is not yet
// running.
func (d *Device) startCopybreak() {
	if _, ok := d.dma.(ring.FaultCounter); !ok {
		d.q.rx.SetCopybreak(DefaultCopybreak)
		return
	}
	if err := d.copybreakAuto(); err != nil {
		d.logf("%v", err)
	}
}

// copybreakStats adds the measured costs, in ns per frame, when the
// copybreak was measured.
func (d *Device) copybreakStats(add func(string, uint64)) {
	c := d.cbCosts.Load()
	if c == nil {
		return
	}
	add("copybreak_handoff_ns", uint64(c.Handoff.Nanoseconds()))
	for _, s := range c.Copy {
		add(fmt.Sprintf("copybreak_copy%d_ns", s.Size), uint64(s.Cost.Nanoseconds()))
	}
	add("copybreak_measured", uint64(c.Copybreak))
}
