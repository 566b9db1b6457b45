package e1000e

import (
	"fmt"

	"github.com/ether9/ether9/drivers/ring"
)

// startCopybreak sets the copybreak a device starts with: DefaultCopybreak
// with untranslated DMA, as in Linux; behind an IOMMU (a DMA view that
// counts faults is a translated one) TranslatedCopybreak until Tune
// measures it. The measurement maps and copies for about 20 ms of QEMU
// TCG time: at probe it was a tenth of the e1000e's boot from QEMU's
// start to 'http: listening'. Called by probe, before the device runs.
func (d *Device) startCopybreak() {
	if d.translated() {
		d.q.rx.SetCopybreak(TranslatedCopybreak)
	} else {
		d.q.rx.SetCopybreak(DefaultCopybreak)
	}
}

func (d *Device) translated() bool {
	_, ok := d.dma.(ring.FaultCounter)
	return ok
}

// Tune implements nic.Tuner: behind an IOMMU it measures the copybreak
// (measureCopybreak), unless a copybreak ctl has set one since probe.
func (d *Device) Tune() error {
	if !d.translated() || d.cbGen.Load() != 0 {
		return nil
	}
	return d.measureCopybreak(0)
}

// copybreakAuto measures the copybreak now (ctl copybreak auto).
func (d *Device) copybreakAuto() error { return d.measureCopybreak(d.cbGen.Add(1)) }

// setCopybreak fixes the copybreak at n (ctl copybreak N): a measurement
// under way when it comes is not applied.
func (d *Device) setCopybreak(n int) {
	d.q.rxMu.Lock()
	defer d.q.rxMu.Unlock()
	d.cbGen.Add(1)
	d.q.rx.SetCopybreak(n)
}

// measureCopybreak measures, through the device's own DMA view, what
// copying a frame and handing its buffer up cost (ring.MeasureCopybreak)
// and sets the copybreak where they meet, unless a copybreak ctl came
// after generation gen was current. Behind an IOMMU the answer depends
// on its invalidation cost and the platform's cost of pinning memory, so
// it is measured, not guessed. On a failed measurement every frame is
// copied (TranslatedCopybreak). The receive path runs on meanwhile: rxMu
// is taken only to set the result. A closed device measures nothing.
func (d *Device) measureCopybreak(gen uint64) error {
	d.cbMu.Lock() // one at a time, and Close waits for it
	defer d.cbMu.Unlock()
	if d.closed.Load() {
		return fmt.Errorf("e1000e %s: copybreak auto: device closed", d.name)
	}
	c, err := ring.MeasureCopybreak(d.dma, rxBufSize)
	d.q.rxMu.Lock()
	defer d.q.rxMu.Unlock()
	if d.cbGen.Load() != gen {
		return nil // a later ctl decided
	}
	if err != nil {
		d.q.rx.SetCopybreak(TranslatedCopybreak)
		return fmt.Errorf("e1000e %s: copybreak auto: %w", d.name, err)
	}
	d.cbCosts.Store(&c)
	d.q.rx.SetCopybreak(min(c.Copybreak, maxCopybreak))
	return nil
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
