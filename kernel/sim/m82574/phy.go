package m82574

// PHY registers reached through MDIC (IEEE 802.3 clause 22 plus the
// vendor status register the e1000e family reads for speed and duplex).
const (
	PhyBMCR     = 0x00
	PhyBMSR     = 0x01
	PhyID1      = 0x02
	PhyID2      = 0x03
	PhyANAR     = 0x04
	PhyANLPAR   = 0x05
	PhyANER     = 0x06
	PhyGBCR     = 0x09 // 1000BASE-T control
	PhyGBSR     = 0x0a // 1000BASE-T status
	PhyESR      = 0x0f // extended status
	PhySpecStat = 0x11 // PHY specific status
	PhyPageSel  = 0x16 // page select (BM and I217-family PHYs)

	BmcrSpeed1000 = 1 << 6
	BmcrFD        = 1 << 8
	BmcrRestartAN = 1 << 9
	BmcrPowerDown = 1 << 11
	BmcrANEnable  = 1 << 12
	BmcrSpeed100  = 1 << 13
	BmcrReset     = 1 << 15

	BmsrLinkStatus = 1 << 2
	BmsrANComplete = 1 << 5

	Anar10FD   = 1 << 6
	Anar100HD  = 1 << 7
	Anar100FD  = 1 << 8
	Gbcr1000FD = 1 << 9
	Gbcr1000HD = 1 << 8

	GbsrLP1000HD = 1 << 10
	GbsrLP1000FD = 1 << 11
	GbsrRemoteOK = 1 << 12
	GbsrLocalOK  = 1 << 13

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
	p.regs[PhyBMCR] = BmcrANEnable | BmcrFD | BmcrSpeed1000
	p.regs[PhyBMSR] = 0x7949 // 10/100 half/full, extended status, preamble suppression, AN able
	p.regs[PhyID1] = uint16(id >> 16)
	p.regs[PhyID2] = uint16(id)
	p.regs[PhyANAR] = 0x0de1 // pause, asym pause, 100/10 full and half, 802.3 selector
	p.regs[PhyGBCR] = Gbcr1000FD | Gbcr1000HD
	p.regs[PhyESR] = 0x3000 // 1000BASE-T full and half
}

func (p *phy) powered() bool { return p.regs[PhyBMCR]&BmcrPowerDown == 0 }

// resolve returns the speed the link settles at: the partner's speed,
// limited by what this PHY advertises (or by the forced speed when
// auto-negotiation is off).
func (p *phy) resolve(partner int) int {
	bmcr := p.regs[PhyBMCR]
	if bmcr&BmcrANEnable == 0 {
		forced := 10
		switch {
		case bmcr&BmcrSpeed1000 != 0:
			forced = 1000
		case bmcr&BmcrSpeed100 != 0:
			forced = 100
		}
		return min(forced, partner)
	}
	switch {
	case partner >= 1000 && p.regs[PhyGBCR]&(Gbcr1000FD|Gbcr1000HD) != 0:
		return 1000
	case partner >= 100 && p.regs[PhyANAR]&(Anar100FD|Anar100HD) != 0:
		return 100
	}
	return 10
}

// setLink updates the status registers for a resolved link.
func (p *phy) setLink(up bool, speed int) {
	p.regs[PhyBMSR] &^= BmsrLinkStatus | BmsrANComplete
	p.regs[PhyGBSR] = 0
	p.regs[PhyANLPAR] = 0
	p.regs[PhySpecStat] = 0
	if !up {
		return
	}
	p.regs[PhyBMSR] |= BmsrLinkStatus | BmsrANComplete
	p.regs[PhyANLPAR] = 0x4000 | 0x0de1 // acknowledge plus the partner's abilities
	if speed == 1000 {
		p.regs[PhyGBSR] = GbsrLocalOK | GbsrRemoteOK | GbsrLP1000FD | GbsrLP1000HD
	}
	p.regs[PhySpecStat] = SpecLink | SpecResolved | SpecFD | uint16(speedCode(speed))<<SpecSpeedSh
}

// mdicLocked runs one MDI transaction. It completes at once: READY is set
// in the same write, with ERROR when the PHY address is wrong.
func (n *NIC) mdicLocked(v uint32) {
	reg := v >> MdicRegSh & 0x1f
	addr := v >> MdicPhySh & 0x1f
	op := v & (3 << 26)
	out := v&^(MdicReady|MdicError) | MdicReady
	p := &n.phy
	switch {
	case uint8(addr) != n.pers.PHYAddr || (op != MdicOpRead && op != MdicOpWrite):
		out |= MdicError
	case op == MdicOpRead:
		out = out&^MdicDataMask | uint32(p.read(reg))
	default:
		p.write(reg, uint16(v))
		n.linkChangedLocked()
	}
	n.regs[MDIC/4] = out
	if v&MdicIE != 0 {
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
	case PhyBMCR:
		if v&BmcrReset != 0 {
			p.reset(uint32(p.regs[PhyID1])<<16 | uint32(p.regs[PhyID2]))
			return
		}
		p.regs[PhyBMCR] = v &^ BmcrRestartAN // restart completes at once
	case PhyBMSR, PhyID1, PhyID2, PhyANLPAR, PhyANER, PhyGBSR, PhyESR, PhySpecStat:
		// read-only
	default:
		p.regs[reg] = v
	}
}
