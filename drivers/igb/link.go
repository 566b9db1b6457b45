package igb

import (
	"github.com/ether9/ether9/drivers/adv"
)

// updateLink re-reads the link from STATUS; called at bring-up and on LSC.
func (d *Device) updateLink() {
	if l := adv.LinkFromStatus(d.regs.Read32(adv.STATUS)); d.link.Set(l) {
		d.logf("%s: link %v", d.name, l)
	}
}

// restartAutoneg turns on and restarts the PHY's auto-negotiation, as a
// copper link needs after a MAC reset; link-up arrives later as LSC.
func (d *Device) restartAutoneg() error {
	bmcr, err := d.core.PHYRead(adv.PHY_BMCR)
	if err != nil {
		return err
	}
	return d.core.PHYWrite(adv.PHY_BMCR, bmcr|adv.BMCR_AN_ENABLE|adv.BMCR_AN_RESTART)
}
