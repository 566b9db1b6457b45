package e1000e

import "github.com/ether9/ether9/drivers/nic"

// linkFromStatus decodes STATUS: LU, FD and the resolved speed.
func linkFromStatus(s uint32) nic.Link {
	l := nic.Link{Up: s&STATUS_LU != 0, FullDuplex: s&STATUS_FD != 0}
	if !l.Up {
		return nic.Link{}
	}
	switch (s & STATUS_SPEED_MASK) >> STATUS_SPEED_SHIFT {
	case 0:
		l.SpeedMbps = 10
	case 1:
		l.SpeedMbps = 100
	default:
		l.SpeedMbps = 1000
	}
	return l
}

// updateLink re-reads the link from STATUS and, when it is up, re-runs the
// TSO rules against the new speed. Called at probe, on every LSC and when
// the TSO setting changes.
func (d *Device) updateLink() {
	d.linkMu.Lock()
	defer d.linkMu.Unlock()
	l := linkFromStatus(d.regs.Read32(STATUS))
	old := d.link.Load()
	if *old != l {
		d.link.Store(&l)
		d.linkChanges.Add(1) // after the store: a moved count means the link is in
		d.logf("%s: link %v", d.name, l)
	}
	d.evalTSO(l, false)
}

// evalTSO applies the TSO rules; the caller holds linkMu. With the link down
// the last decision stands until the next link-up, unless the setting
// changed.
func (d *Device) evalTSO(l nic.Link, settingChanged bool) {
	if !l.Up && d.tsoWhy.Load() != nil && !settingChanged {
		return
	}
	use, why := useTSO(d.info, TSOMode(d.tsoMode.Load()), l)
	if prev := d.tsoWhy.Load(); prev == nil || d.tso.Load() != use {
		d.logf("%s: tso %v: %s", d.name, use, why)
	}
	d.tsoWhy.Store(&why)
	d.tso.Store(use)
}
