package m82576

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// The internal PHY as software reaches it through MDIC: the IEEE
// registers (nicmodel) and an IGP-3 identifier. Auto-negotiation completes
// at once, at the partner's speed, full duplex, when the cable is in.
const (
	phyAddress = 1
	phyRegs    = 32
	phyIDHigh  = 0x02a8
	phyIDLow   = 0x0391
)

type phy struct{ r [phyRegs]uint16 }

func (p *phy) reset() {
	clear(p.r[:])
	p.r[nicmodel.PhyBMCR] = 0x1140 // auto-negotiation, full duplex, 1000 Mb/s
	p.r[nicmodel.PhyBMSR] = 0x7949
	p.r[nicmodel.PhyID1] = phyIDHigh
	p.r[nicmodel.PhyID2] = phyIDLow
	p.r[nicmodel.PhyANAR] = 0x0de1
	p.r[nicmodel.PhyGBCR] = 0x0300
	p.r[nicmodel.PhyESR] = 0x3000
}

func (p *phy) powered() bool { return p.r[nicmodel.PhyBMCR]&nicmodel.BmcrPowerDown == 0 }

// setLink records the negotiated link: the partner's abilities up to
// speed (Mb/s) in ANLPAR and the 1000BASE-T status.
func (p *phy) setLink(up bool, speed int) {
	if up {
		p.r[nicmodel.PhyBMSR] |= nicmodel.BmsrLinkStatus | nicmodel.BmsrANComplete
		p.r[nicmodel.PhyANLPAR] = 0xc061 // acknowledge, 10 full and half duplex
		if speed >= 100 {
			p.r[nicmodel.PhyANLPAR] |= 0x0180 // 100 full and half duplex
		}
		p.r[nicmodel.PhyGBSR] = 0
		if speed >= 1000 {
			p.r[nicmodel.PhyGBSR] = 0x3c00 // local and remote receiver OK, partner 1000 FD/HD
		}
		return
	}
	p.r[nicmodel.PhyBMSR] &^= nicmodel.BmsrLinkStatus | nicmodel.BmsrANComplete
	p.r[nicmodel.PhyANLPAR], p.r[nicmodel.PhyGBSR] = 0, 0
}

// mdicLocked runs one MDIC transaction; it completes at once (READY set).
// A PHY address other than the internal PHY's, or an unknown opcode,
// completes with ERROR and the data field clear.
func (n *NIC) mdicLocked(v uint32) {
	m := nicmodel.MDI(v)
	switch {
	case m.PHY() != phyAddress || !m.Read() && !m.Write():
		n.regs[nicmodel.MDIC/4] = m.Done(0, true)
	case m.Read():
		n.regs[nicmodel.MDIC/4] = m.Done(n.phy.r[m.Reg()], false)
	default:
		n.phyWriteLocked(m.Reg(), m.Data())
		n.regs[nicmodel.MDIC/4] = m.Done(m.Data(), false)
	}
	if v&nicmodel.MdicIE != 0 {
		n.otherCauseLocked(1 << 9) // MDAC
	}
}

// phyWriteLocked writes PHY register reg.
func (n *NIC) phyWriteLocked(reg uint32, d uint16) {
	switch reg {
	case nicmodel.PhyBMCR:
		if d&nicmodel.BmcrReset != 0 {
			n.phy.reset()
		} else {
			n.phy.r[nicmodel.PhyBMCR] = d &^ nicmodel.BmcrRestartAN
		}
		// The PHY renegotiates: the link comes back (with LSC) unless it
		// is now powered down.
		n.phy.setLink(false, 0)
		n.linkUp, n.speed = false, 0
		n.linkChangedLocked()
	case nicmodel.PhyBMSR, nicmodel.PhyID1, nicmodel.PhyID2, nicmodel.PhyANLPAR, nicmodel.PhyGBSR, nicmodel.PhyESR:
		// read-only
	default:
		n.phy.r[reg] = d
	}
}
