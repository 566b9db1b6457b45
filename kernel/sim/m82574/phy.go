package m82574

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// The vendor registers the e1000e family's PHYs add to clause 22
// (nicmodel): the status register read for speed and duplex, and the page
// select of the BM and I217-family PHYs.
const (
	PhySpecStat = 0x11 // PHY specific status
	PhyPageSel  = 0x16 // page select

	SpecLink     = 1 << 10
	SpecResolved = 1 << 11
	SpecFD       = 1 << 13
	SpecSpeedSh  = 14
)

type phy struct {
	regs  [32]uint16
	paged map[uint32]uint16 // registers of pages other than 0, as written
}

func (p *phy) reset(id uint32) {
	clear(p.regs[:])
	p.paged = nil
	p.regs[nicmodel.PhyBMCR] = nicmodel.BmcrANEnable | nicmodel.BmcrFD | nicmodel.BmcrSpeed1000
	p.regs[nicmodel.PhyBMSR] = 0x7949 // 10/100 half/full, extended status, preamble suppression, AN able
	p.regs[nicmodel.PhyID1] = uint16(id >> 16)
	p.regs[nicmodel.PhyID2] = uint16(id)
	p.regs[nicmodel.PhyANAR] = 0x0de1 // pause, asym pause, 100/10 full and half, 802.3 selector
	p.regs[nicmodel.PhyGBCR] = nicmodel.Gbcr1000FD | nicmodel.Gbcr1000HD
	p.regs[nicmodel.PhyESR] = 0x3000 // 1000BASE-T full and half
}

func (p *phy) powered() bool { return p.regs[nicmodel.PhyBMCR]&nicmodel.BmcrPowerDown == 0 }

// resolve returns the speed the link settles at: the partner's speed,
// limited by what this PHY advertises (or by the forced speed when
// auto-negotiation is off).
func (p *phy) resolve(partner int) int {
	bmcr := p.regs[nicmodel.PhyBMCR]
	if bmcr&nicmodel.BmcrANEnable == 0 {
		forced := 10
		switch {
		case bmcr&nicmodel.BmcrSpeed1000 != 0:
			forced = 1000
		case bmcr&nicmodel.BmcrSpeed100 != 0:
			forced = 100
		}
		return min(forced, partner)
	}
	switch {
	case partner >= 1000 && p.regs[nicmodel.PhyGBCR]&(nicmodel.Gbcr1000FD|nicmodel.Gbcr1000HD) != 0:
		return 1000
	case partner >= 100 && p.regs[nicmodel.PhyANAR]&(nicmodel.Anar100FD|nicmodel.Anar100HD) != 0:
		return 100
	}
	return 10
}

// setLink updates the status registers for a resolved link.
func (p *phy) setLink(up bool, speed int) {
	p.regs[nicmodel.PhyBMSR] &^= nicmodel.BmsrLinkStatus | nicmodel.BmsrANComplete
	p.regs[nicmodel.PhyGBSR] = 0
	p.regs[nicmodel.PhyANLPAR] = 0
	p.regs[PhySpecStat] = 0
	if !up {
		return
	}
	p.regs[nicmodel.PhyBMSR] |= nicmodel.BmsrLinkStatus | nicmodel.BmsrANComplete
	p.regs[nicmodel.PhyANLPAR] = 0x4000 | 0x0de1 // acknowledge plus the partner's abilities
	if speed == 1000 {
		p.regs[nicmodel.PhyGBSR] = nicmodel.GbsrLocalOK | nicmodel.GbsrRemoteOK | nicmodel.GbsrLP1000FD | nicmodel.GbsrLP1000HD
	}
	p.regs[PhySpecStat] = SpecLink | SpecResolved | SpecFD | uint16(nicmodel.SpeedCode(speed))<<SpecSpeedSh
}

// mdicLocked runs one MDI transaction. It completes at once: READY is set
// in the same write, with ERROR when the PHY address is wrong.
func (n *NIC) mdicLocked(v uint32) {
	m := nicmodel.MDI(v)
	switch {
	case uint8(m.PHY()) != n.pers.PHYAddr || !m.Read() && !m.Write():
		n.regs[nicmodel.MDIC/4] = m.Done(m.Data(), true)
	case m.Read():
		n.regs[nicmodel.MDIC/4] = m.Done(n.phy.read(m.Reg()), false)
	default:
		n.phy.write(m.Reg(), m.Data())
		n.linkChangedLocked()
		n.regs[nicmodel.MDIC/4] = m.Done(m.Data(), false)
	}
	if v&nicmodel.MdicIE != 0 {
		n.causeLocked(IntMDAC)
	}
}

func (p *phy) page() uint32 { return uint32(p.regs[PhyPageSel]) }

func (p *phy) read(reg uint32) uint16 {
	if pg := p.page(); pg != 0 && reg != PhyPageSel {
		return p.paged[pg<<5|reg]
	}
	return p.regs[reg]
}

func (p *phy) write(reg uint32, v uint16) {
	if pg := p.page(); pg != 0 && reg != PhyPageSel {
		if p.paged == nil {
			p.paged = make(map[uint32]uint16)
		}
		p.paged[pg<<5|reg] = v
		return
	}
	switch reg {
	case nicmodel.PhyBMCR:
		if v&nicmodel.BmcrReset != 0 {
			p.reset(uint32(p.regs[nicmodel.PhyID1])<<16 | uint32(p.regs[nicmodel.PhyID2]))
			return
		}
		p.regs[nicmodel.PhyBMCR] = v &^ nicmodel.BmcrRestartAN // restart completes at once
	case nicmodel.PhyBMSR, nicmodel.PhyID1, nicmodel.PhyID2, nicmodel.PhyANLPAR, nicmodel.PhyANER, nicmodel.PhyGBSR, nicmodel.PhyESR, PhySpecStat:
		// read-only
	default:
		p.regs[reg] = v
	}
}
