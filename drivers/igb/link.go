package igb

import (
	"github.com/ether9/ether9/drivers/adv"
)

// updateLink re-reads the link from STATUS; called at bring-up and on LSC.
func (d *Device) updateLink() {
	if l := adv.LinkFromStatus(d.Core.Regs.Read32(adv.STATUS)); d.LinkState.Set(l) {
		d.Core.Logf("%s: link %v", d.Core.Name, l)
	}
}

// restartAutoneg turns on and restarts the PHY's auto-negotiation, as a
// copper link needs after a MAC reset; link-up arrives later as LSC.
func (d *Device) restartAutoneg() error {
	bmcr, err := d.Core.PHYRead(adv.PHY_BMCR)
	if err != nil {
		return err
	}
	return d.Core.PHYWrite(adv.PHY_BMCR, bmcr|adv.BMCR_AN_ENABLE|adv.BMCR_AN_RESTART)
}
