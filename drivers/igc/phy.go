package igc

import (
	"github.com/ether9/ether9/drivers/adv"
)

// PHY registers (IEEE 802.3 clause 22) beyond BMCR and, through the MMD
// access registers, the clause 45 multi-gigabit auto-negotiation control.
const (
	PHY_ANAR    = 4
	PHY_GCTRL   = 9 // 1000BASE-T control
	PHY_MMDCTRL = 13
	PHY_MMDDATA = 14

	ANAR_SELECTOR = 0x01 // IEEE 802.3
	ANAR_10HD     = 1 << 5
	ANAR_10FD     = 1 << 6
	ANAR_100HD    = 1 << 7
	ANAR_100FD    = 1 << 8
	GCTRL_1000FD  = 1 << 9

	MMD_AN             = 7
	MMD_FUNC_DATA      = 1 << 14 // MMDCTRL function: data, no post-increment
	AN_MGBT_CTRL       = 0x20    // multi-gigabit AN control
	AN_MGBT_CTRL_2500  = 1 << 7
	phyAdvertiseLegacy = ANAR_SELECTOR | ANAR_10HD | ANAR_10FD | ANAR_100HD | ANAR_100FD
)

// mmdWrite writes a clause 45 register through MMDCTRL/MMDDATA: select
// the device and the address, then write the data.
func (d *Device) mmdWrite(dev, reg int, v uint16) error {
	for _, w := range [][2]int{{PHY_MMDCTRL, dev}, {PHY_MMDDATA, reg}, {PHY_MMDCTRL, MMD_FUNC_DATA | dev}, {PHY_MMDDATA, int(v)}} {
		if err := d.Core.PHYWrite(w[0], uint16(w[1])); err != nil {
			return err
		}
	}
	return nil
}

// setupPHY advertises every speed from 10 Mb/s half duplex to 2.5 Gb/s
// and restarts auto-negotiation; the PHY settles the speed with the
// partner and STATUS reports it. A PHY that does not answer leaves the
// link to its power-on advertisement, which also covers every speed.
func (d *Device) setupPHY() {
	err := d.Core.PHYWrite(PHY_ANAR, phyAdvertiseLegacy)
	if err == nil {
		err = d.Core.PHYWrite(PHY_GCTRL, GCTRL_1000FD)
	}
	if err == nil {
		err = d.mmdWrite(MMD_AN, AN_MGBT_CTRL, AN_MGBT_CTRL_2500)
	}
	if err == nil {
		err = d.Core.PHYWrite(adv.PHY_BMCR, adv.BMCR_AN_ENABLE|adv.BMCR_AN_RESTART)
	}
	if err != nil {
		d.Core.Logf("%s: PHY set-up: %v", d.Core.Name, err)
	}
}
