package mi225

// The internal PHY (a GPY211 core), reached through MDIC at PHY address
// 1: the IEEE clause 22 registers, and clause 45 MMD registers through the
// MMD access registers 13 and 14, where MMD 7 holds the 2.5GBASE-T
// advertisement.
const (
	PhyAddr    = 1
	PhyBMCR    = 0
	PhyBMSR    = 1
	PhyID1     = 2
	PhyID2     = 3
	PhyANAR    = 4
	PhyANLPAR  = 5
	PhyGCTRL   = 9  // 1000BASE-T control
	PhyGSTAT   = 10 // 1000BASE-T status
	PhyMMDCTRL = 13
	PhyMMDData = 14

	BmcrReset     = 1 << 15
	BmcrANEnable  = 1 << 12
	BmcrPowerDown = 1 << 11
	BmcrANRestart = 1 << 9
	BmsrLink      = 1 << 2
	BmsrANAble    = 1 << 3
	BmsrANDone    = 1 << 5
	Anar10HD      = 1 << 5
	Anar10FD      = 1 << 6
	Anar100HD     = 1 << 7
	Anar100FD     = 1 << 8
	Gctrl1000FD   = 1 << 9
	Gstat1000FD   = 1 << 11

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
	p.regs[PhyBMCR] = BmcrANEnable
	p.regs[PhyBMSR] = 0x7949 | BmsrANAble
	p.regs[PhyID1] = phyIDValue >> 16
	p.regs[PhyID2] = phyIDValue & 0xffff
	p.regs[PhyANAR] = 0x01e1 // 10/100 half and full, selector 802.3
	p.regs[PhyGCTRL] = Gctrl1000FD
	p.mmd7 = map[uint16]uint16{}
	if part.MaxMbps >= 2500 {
		p.mmd7[MMDMGBTCtrl] = MGBTCtrl2500
	}
}

func (p *phy) powered() bool { return p.regs[PhyBMCR]&BmcrPowerDown == 0 }

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
		{1000, p.regs[PhyGCTRL]&Gctrl1000FD != 0},
		{100, p.regs[PhyANAR]&(Anar100FD|Anar100HD) != 0},
		{10, p.regs[PhyANAR]&(Anar10FD|Anar10HD) != 0},
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
	p.regs[PhyBMSR] &^= BmsrLink | BmsrANDone
	p.regs[PhyANLPAR], p.regs[PhyGSTAT] = 0, 0
	p.mmd7[MMDMGBTStat] = 0
	if !up {
		return
	}
	p.regs[PhyBMSR] |= BmsrLink | BmsrANDone
	p.regs[PhyANLPAR] = 0x4000 | Anar10HD | Anar10FD | 1
	if speed >= 100 {
		p.regs[PhyANLPAR] |= Anar100HD | Anar100FD
	}
	if speed >= 1000 {
		p.regs[PhyGSTAT] = Gstat1000FD
	}
	if speed >= 2500 {
		p.mmd7[MMDMGBTStat] = MGBTStat2500LP
	}
}

// mdicLocked runs an MDIC transaction; it completes at once (READY set).
// An access to another PHY address completes with ERROR.
func (n *NIC) mdicLocked(v uint32) {
	reg := v >> MdicRegShift & 0x1f
	addr := v >> MdicPhyShift & 0x1f
	op := v & (3 << 26)
	out := v&^(MdicError|MdicInterrupt) | MdicReady
	if addr != PhyAddr || (op != MdicOpRead && op != MdicOpWrite) {
		n.regs[MDIC/4] = out | MdicError
		return
	}
	p := &n.phy
	if op == MdicOpRead {
		out = out&^MdicDataMask | uint32(p.read(uint16(reg)))
	} else {
		p.write(uint16(reg), uint16(v))
		n.linkChangedLocked()
	}
	n.regs[MDIC/4] = out
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
	case PhyBMCR:
		if v&BmcrReset != 0 {
			keep := p.mmd7
			p.regs[PhyBMCR] = BmcrANEnable | v&BmcrPowerDown
			p.mmd7 = keep
			return
		}
		p.regs[PhyBMCR] = v &^ BmcrANRestart
	case PhyBMSR, PhyID1, PhyID2, PhyANLPAR, PhyGSTAT:
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
