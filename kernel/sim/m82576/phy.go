package m82576

// The internal PHY as software reaches it through MDIC: the IEEE registers
// and an IGP-3 identifier. Auto-negotiation completes at once, at the
// partner's speed, full duplex, when the cable is in.
const (
	phyBMCR    = 0
	phyBMSR    = 1
	phyID1     = 2
	phyID2     = 3
	phyANAR    = 4
	phyANLPAR  = 5
	phyGCR     = 9
	phyGSR     = 10
	phyESR     = 15
	phyRegs    = 32
	phyIDHigh  = 0x02a8
	phyIDLow   = 0x0391
	bmcrReset  = 0x8000
	bmcrPDown  = 0x0800
	bmcrRestAN = 0x0200
	bmsrLink   = 0x0004
	bmsrANDone = 0x0020
)

type phy struct{ r [phyRegs]uint16 }

func (p *phy) reset() {
	clear(p.r[:])
	p.r[phyBMCR] = 0x1140 // auto-negotiation, full duplex, 1000 Mb/s
	p.r[phyBMSR] = 0x7949
	p.r[phyID1] = phyIDHigh
	p.r[phyID2] = phyIDLow
	p.r[phyANAR] = 0x0de1
	p.r[phyGCR] = 0x0300
	p.r[phyESR] = 0x3000
}

func (p *phy) powered() bool { return p.r[phyBMCR]&bmcrPDown == 0 }

// setLink records the negotiated link: the partner's abilities up to
// speed (Mb/s) in ANLPAR and the 1000BASE-T status.
func (p *phy) setLink(up bool, speed int) {
	if up {
		p.r[phyBMSR] |= bmsrLink | bmsrANDone
		p.r[phyANLPAR] = 0xc061 // acknowledge, 10 full and half duplex
		if speed >= 100 {
			p.r[phyANLPAR] |= 0x0180 // 100 full and half duplex
		}
		p.r[phyGSR] = 0
		if speed >= 1000 {
			p.r[phyGSR] = 0x3c00 // local and remote receiver OK, partner 1000 FD/HD
		}
		return
	}
	p.r[phyBMSR] &^= bmsrLink | bmsrANDone
	p.r[phyANLPAR], p.r[phyGSR] = 0, 0
}

// mdicLocked runs one MDIC transaction; it completes at once (READY set).
// A PHY address other than the internal PHY's, or an unknown opcode,
// completes with ERROR.
func (n *NIC) mdicLocked(v uint32) {
	reg := v >> MdicRegSh & 0x1f
	addr := v >> MdicPhySh & 0x1f
	op := v & (3 << MdicOpSh)
	out := v&^(MdicError|0xffff) | MdicReady
	switch {
	case addr != phyAddress || (op != MdicRead && op != MdicWrite):
		out |= MdicError
	case op == MdicRead:
		out |= uint32(n.phy.r[reg])
	default:
		d := uint16(v)
		switch reg {
		case phyBMCR:
			if d&bmcrReset != 0 {
				n.phy.reset()
			} else {
				n.phy.r[phyBMCR] = d &^ bmcrRestAN
			}
			// The PHY renegotiates: the link comes back (with LSC)
			// unless it is now powered down.
			n.phy.setLink(false, 0)
			n.linkUp, n.speed = false, 0
			n.linkChangedLocked()
		case phyBMSR, phyID1, phyID2, phyANLPAR, phyGSR, phyESR:
			// read-only
		default:
			n.phy.r[reg] = d
		}
		out |= uint32(d)
	}
	n.regs[MDIC/4] = out
	if v&MdicIE != 0 {
		n.otherCauseLocked(1 << 9) // MDAC
	}
}
