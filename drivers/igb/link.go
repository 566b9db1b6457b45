package igb

import (
	"fmt"
	"time"

	"github.com/ether9/ether9/drivers/nic"
)

// linkFromStatus decodes STATUS: LU, FD and the resolved speed.
func linkFromStatus(s uint32) nic.Link {
	if s&STATUS_LU == 0 {
		return nic.Link{}
	}
	l := nic.Link{Up: true, FullDuplex: s&STATUS_FD != 0}
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

// updateLink re-reads the link from STATUS; called at bring-up and on LSC.
func (d *Device) updateLink() {
	d.linkMu.Lock()
	defer d.linkMu.Unlock()
	l := linkFromStatus(d.regs.Read32(STATUS))
	if old := d.link.Load(); *old != l {
		d.changes.Add(1)
		d.link.Store(&l)
		d.logf("%s: link %v", d.name, l)
	}
}

// mdic runs one PHY register access through MDIC and returns the data.
func (d *Device) mdic(cmd uint32) (uint16, error) {
	r := d.regs
	r.Write32(MDIC, cmd|phyAddrInternal<<MDIC_PHY_SHIFT)
	var v uint32
	if !d.waitFor(10*time.Millisecond, func() bool { v = r.Read32(MDIC); return v&(MDIC_READY|MDIC_ERROR) != 0 }) {
		return 0, fmt.Errorf("igb %s: MDIC %#x: not ready", d.name, cmd)
	}
	if v&MDIC_ERROR != 0 {
		return 0, fmt.Errorf("igb %s: MDIC %#x: error", d.name, cmd)
	}
	return uint16(v & MDIC_DATA_MASK), nil
}

// restartAutoneg turns on and restarts the PHY's auto-negotiation, as a
// copper link needs after a MAC reset; link-up arrives later as LSC.
func (d *Device) restartAutoneg() error {
	ctl, err := d.mdic(MDIC_OP_READ | PHY_CONTROL<<MDIC_REG_SHIFT)
	if err != nil {
		return err
	}
	ctl |= MII_CR_AUTO_NEG_EN | MII_CR_RESTART_AN
	_, err = d.mdic(MDIC_OP_WRITE | PHY_CONTROL<<MDIC_REG_SHIFT | uint32(ctl))
	return err
}
