package igb

import (
	"fmt"
	"github.com/ether9/ether9/drivers/advregs"
	"time"

	"github.com/ether9/ether9/drivers/nic"
)

// linkFromStatus decodes STATUS: LU, FD and the resolved speed.
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
		d.logf("%s: link %v", d.name, l)
	}
}

// mdic runs one PHY register access through MDIC and returns the data.
func (d *Device) mdic(cmd uint32) (uint16, error) {
	r := d.regs
	r.Write32(advregs.MDIC, cmd|advregs.PHYAddrInternal<<advregs.MDIC_PHY_SHIFT)
	var v uint32
	if !d.waitFor(10*time.Millisecond, func() bool { v = r.Read32(advregs.MDIC); return v&(advregs.MDIC_READY|advregs.MDIC_ERROR) != 0 }) {
		return 0, fmt.Errorf("igb %s: MDIC %#x: not ready", d.name, cmd)
	}
	if v&advregs.MDIC_ERROR != 0 {
		return 0, fmt.Errorf("igb %s: MDIC %#x: error", d.name, cmd)
	}
	return uint16(v & advregs.MDIC_DATA_MASK), nil
}

// restartAutoneg turns on and restarts the PHY's auto-negotiation, as a
// copper link needs after a MAC reset; link-up arrives later as LSC.
func (d *Device) restartAutoneg() error {
	ctl, err := d.mdic(advregs.MDIC_OP_READ | advregs.PHY_BMCR<<advregs.MDIC_REG_SHIFT)
	if err != nil {
		return err
	}
	ctl |= advregs.BMCR_AN_ENABLE | advregs.BMCR_AN_RESTART
	_, err = d.mdic(advregs.MDIC_OP_WRITE | advregs.PHY_BMCR<<advregs.MDIC_REG_SHIFT | uint32(ctl))
	return err
}
