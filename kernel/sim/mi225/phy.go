package mi225

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// The internal PHY (a GPY211 core), reached through MDIC at PHY address
// 1: the IEEE clause 22 registers (nicmodel), and clause 45 MMD registers
// through the MMD access registers 13 and 14, where MMD 7 holds the
// 2.5GBASE-T advertisement.
const (
	PhyAddr    = 1
	PhyMMDCTRL = 13
	PhyMMDData = 14

	MMDAN          = 7
	MMDMGBTCtrl    = 0x20 // multi-gigabit AN control: 2.5G advertise bit 7
	MMDMGBTStat    = 0x21 // multi-gigabit AN status: partner 2.5G bit 5
	MGBTCtrl2500   = 1 << 7
	MGBTStat2500LP = 1 << 5

	phyIDValue = 0x67c9dc00
)

type phy struct {
	regs    [32]uint16
	mmdAddr [32]uint16        // per device address register
	mmd7    map[uint16]uint16 // AN MMD registers
	mmdDev  uint16
}

func (p *phy) reset(part Part) {
	p.regs = [32]uint16{}
	p.regs[nicmodel.PhyBMCR] = nicmodel.BmcrANEnable
	p.regs[nicmodel.PhyBMSR] = 0x7949 | nicmodel.BmsrANAble
	p.regs[nicmodel.PhyID1] = phyIDValue >> 16
	p.regs[nicmodel.PhyID2] = phyIDValue & 0xffff
	p.regs[nicmodel.PhyANAR] = 0x01e1 // 10/100 half and full, selector 802.3
	p.regs[nicmodel.PhyGBCR] = nicmodel.Gbcr1000FD
	p.mmd7 = map[uint16]uint16{}
	if part.MaxMbps >= 2500 {
		p.mmd7[MMDMGBTCtrl] = MGBTCtrl2500
	}
}

func (p *phy) powered() bool { return p.regs[nicmodel.PhyBMCR]&nicmodel.BmcrPowerDown == 0 }

// resolve returns the speed autonegotiation settles on against a partner
// that offers every speed up to partner, or 0 when there is none.
func (p *phy) resolve(partner int) int {
	if !p.powered() {
		return 0
	}
	adv := []struct {
		mbps int
		on   bool
	}{
		{2500, p.mmd7[MMDMGBTCtrl]&MGBTCtrl2500 != 0},
		{1000, p.regs[nicmodel.PhyGBCR]&nicmodel.Gbcr1000FD != 0},
		{100, p.regs[nicmodel.PhyANAR]&(nicmodel.Anar100FD|nicmodel.Anar100HD) != 0},
		{10, p.regs[nicmodel.PhyANAR]&(nicmodel.Anar10FD|nicmodel.Anar10HD) != 0},
	}
	for _, a := range adv {
		if a.on && a.mbps <= partner {
			return a.mbps
		}
	}
	return 0
}

// setLink updates the status registers after the link changed.
func (p *phy) setLink(up bool, speed int) {
	p.regs[nicmodel.PhyBMSR] &^= nicmodel.BmsrLinkStatus | nicmodel.BmsrANComplete
	p.regs[nicmodel.PhyANLPAR], p.regs[nicmodel.PhyGBSR] = 0, 0
	p.mmd7[MMDMGBTStat] = 0
	if !up {
		return
	}
	p.regs[nicmodel.PhyBMSR] |= nicmodel.BmsrLinkStatus | nicmodel.BmsrANComplete
	p.regs[nicmodel.PhyANLPAR] = 0x4000 | nicmodel.Anar10HD | nicmodel.Anar10FD | 1
	if speed >= 100 {
		p.regs[nicmodel.PhyANLPAR] |= nicmodel.Anar100HD | nicmodel.Anar100FD
	}
	if speed >= 1000 {
		p.regs[nicmodel.PhyGBSR] = nicmodel.GbsrLP1000FD
	}
	if speed >= 2500 {
		p.mmd7[MMDMGBTStat] = MGBTStat2500LP
	}
}

// mdicLocked runs an MDIC transaction; it completes at once (READY set,
// the interrupt enable bit cleared). An access to another PHY address
// completes with ERROR.
func (n *NIC) mdicLocked(v uint32) {
	m := nicmodel.MDI(v &^ nicmodel.MdicIE)
	switch {
	case m.PHY() != PhyAddr || !m.Read() && !m.Write():
		n.regs[nicmodel.MDIC/4] = m.Done(m.Data(), true)
	case m.Read():
		n.regs[nicmodel.MDIC/4] = m.Done(n.phy.read(uint16(m.Reg())), false)
	default:
		n.phy.write(uint16(m.Reg()), m.Data())
		n.linkChangedLocked()
		n.regs[nicmodel.MDIC/4] = m.Done(m.Data(), false)
	}
}

func (p *phy) read(reg uint16) uint16 {
	if reg == PhyMMDData {
		if p.mmdDev == MMDAN {
			return p.mmd7[p.mmdAddr[MMDAN]]
		}
		return 0
	}
	return p.regs[reg]
}

func (p *phy) write(reg, v uint16) {
	switch reg {
	case nicmodel.PhyBMCR:
		if v&nicmodel.BmcrReset != 0 {
			keep := p.mmd7
			p.regs[nicmodel.PhyBMCR] = nicmodel.BmcrANEnable | v&nicmodel.BmcrPowerDown
			p.mmd7 = keep
			return
		}
		p.regs[nicmodel.PhyBMCR] = v &^ nicmodel.BmcrRestartAN
	case nicmodel.PhyBMSR, nicmodel.PhyID1, nicmodel.PhyID2, nicmodel.PhyANLPAR, nicmodel.PhyGBSR:
		// read-only
	case PhyMMDCTRL:
		p.regs[reg] = v
		p.mmdDev = v & 0x1f
	case PhyMMDData:
		dev := p.mmdDev
		if p.regs[PhyMMDCTRL]>>14 == 0 { // function: address
			p.mmdAddr[dev] = v
			return
		}
		if dev == MMDAN && p.mmdAddr[MMDAN] != MMDMGBTStat {
			p.mmd7[p.mmdAddr[MMDAN]] = v
		}
	default:
		p.regs[reg] = v
	}
}
