package igb

import (
	"github.com/ether9/ether9/drivers/advmac"
	"github.com/ether9/ether9/drivers/advregs"
)

// updateLink re-reads the link from STATUS; called at bring-up and on LSC.
func (d *Device) updateLink() {
	if l := advmac.LinkFromStatus(d.regs.Read32(advregs.STATUS)); d.link.Set(l) {
		d.logf("%s: link %v", d.name, l)
	}
}

// restartAutoneg turns on and restarts the PHY's auto-negotiation, as a
// copper link needs after a MAC reset; link-up arrives later as LSC.
func (d *Device) restartAutoneg() error {
	bmcr, err := d.core.PHYRead(advregs.PHY_BMCR)
	if err != nil {
		return err
	}
	return d.core.PHYWrite(advregs.PHY_BMCR, bmcr|advregs.BMCR_AN_ENABLE|advregs.BMCR_AN_RESTART)
}
