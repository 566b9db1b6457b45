package igc

import (
	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
)

// linkFromStatus decodes STATUS: LU, FD and the resolved speed, where
// 2.5 Gb/s shows as the 1000 Mb/s code plus STATUS_SPEED_2500.
func linkFromStatus(s uint32) nic.Link {
	l := adv.LinkFromStatus(s)
	if l.SpeedMbps == 1000 && s&STATUS_SPEED_2500 != 0 {
		l.SpeedMbps = 2500
	}
	return l
}

// updateLink re-reads the link from STATUS; called at bring-up and on LSC.
func (d *Device) updateLink() {
	if l := linkFromStatus(d.Core.Regs.Read32(adv.STATUS)); d.LinkState.Set(l) {
		d.Core.Logf("%s: link %+v", d.Core.Name, l)
	}
}
