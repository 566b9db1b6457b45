package igc

import "github.com/ether9/ether9/drivers/advregs"
import "github.com/ether9/ether9/drivers/nic"

// linkFromStatus decodes STATUS: LU, FD and the resolved speed, where
// 2.5 Gb/s shows as the 1000 Mb/s code plus STATUS_SPEED_2500.
func linkFromStatus(s uint32) nic.Link {
	if s&advregs.STATUS_LU == 0 {
		return nic.Link{}
	}
	l := nic.Link{Up: true, FullDuplex: s&advregs.STATUS_FD != 0}
	switch (s & advregs.STATUS_SPEED_MASK) >> advregs.STATUS_SPEED_SHIFT {
	case 0:
		l.SpeedMbps = 10
	case 1:
		l.SpeedMbps = 100
	default:
		l.SpeedMbps = 1000
		if s&STATUS_SPEED_2500 != 0 {
			l.SpeedMbps = 2500
		}
	}
	return l
}

// updateLink re-reads the link from STATUS; called at bring-up and on LSC.
func (d *Device) updateLink() {
	d.linkMu.Lock()
	defer d.linkMu.Unlock()
	l := linkFromStatus(d.regs.Read32(advregs.STATUS))
	if old := d.link.Load(); *old != l {
		d.changes.Add(1)
		d.link.Store(&l)
		d.logf("%s: link %+v", d.name, l)
	}
}
