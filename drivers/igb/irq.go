package igb

import "github.com/ether9/ether9/drivers/advregs"
import "time"

// Interrupts: queue pair n's RX and TX causes go to vector n, the other
// causes (link) to the vector after the queues'. Every vector auto-clears
// its cause and auto-masks itself as it fires (EIAC, EIAM with
// GPIE.EIAME), so a queue that is busy polling gets no interrupts; when
// its poll loop goes idle it re-arms its own vector in EIMS and sleeps.
// EITR holds each vector to at most one interrupt per itrInterval.

// itrInterval is the moderation interval of every vector: about 20000
// interrupts a second, as Linux's igb starts with.
const itrInterval = 50 * time.Microsecond

// ivarSlot is where a MAC type keeps the IVAR entry of RX (or TX) queue q:
// a register and the entry's bit offset in it.
func ivarSlot(t MACType, q int, tx bool) (reg uint32, shift uint) {
	if tx {
		shift = 8
	}
	if t == Mac82576 {
		// IVAR(q mod 8): queues 0-7 in bits 15:0, queues 8-15 in 31:16.
		return advregs.IVAR0 + 4*uint32(q&7), shift + uint(q&8)<<1
	}
	// 82580 and later: IVAR(q/2), odd queues in bits 31:16.
	return advregs.IVAR0 + 4*uint32(q>>1), shift + uint(q&1)<<4
}

// setupInterrupts routes the causes to vectors, sets moderation and
// auto-clear/auto-mask, and arms every vector.
func (d *Device) setupInterrupts() {
	r := d.regs
	other := len(d.queues)
	var all uint32
	if d.info.Type == Mac82575 {
		// The 82575's EICR bits are causes; MSIXBM groups them into
		// vectors.
		r.Write32(advregs.CTRL_EXT, r.Read32(advregs.CTRL_EXT)|CTRL_EXT_PBA_CLR|CTRL_EXT_EIAME|CTRL_EXT_IRCA)
		for _, q := range d.queues {
			q.eims = EICR_RX_QUEUE0<<q.idx | EICR_TX_QUEUE0<<q.idx
			r.Write32(MSIXBM0+4*uint32(q.idx), q.eims)
			all |= q.eims
		}
		d.other = EICR_OTHER
		r.Write32(MSIXBM0+4*uint32(other), EICR_OTHER)
	} else {
		r.Write32(advregs.GPIE, advregs.GPIE_NSICR|advregs.GPIE_MULTIPLE_MSIX|advregs.GPIE_EIAME|advregs.GPIE_PBA)
		var ivar [8]uint32
		for _, q := range d.queues {
			for _, tx := range []bool{false, true} {
				reg, shift := ivarSlot(d.info.Type, q.idx, tx)
				ivar[(reg-advregs.IVAR0)/4] |= (advregs.IVAR_VALID | uint32(q.idx)) << shift
			}
			q.eims = 1 << q.idx
			all |= q.eims
		}
		for i, v := range ivar {
			r.Write32(advregs.IVAR0+4*uint32(i), v)
		}
		r.Write32(advregs.IVAR_MISC, (advregs.IVAR_VALID|uint32(other))<<advregs.IVAR_MISC_OTHER_SHIFT)
		d.other = 1 << other
	}
	all |= d.other
	itr := uint32(itrInterval/time.Microsecond) << advregs.EITR_INTERVAL_SHIFT & advregs.EITR_INTERVAL_MASK
	if d.info.Type == Mac82575 {
		itr |= itr << 16 // the 82575 loads its counter from the upper half
	}
	for v := 0; v <= other; v++ {
		r.Write32(advregs.EITR0+4*uint32(v), itr)
	}
	r.Write32(advregs.EIAC, all)
	r.Write32(advregs.EIAM, all)
	r.Read32(advregs.ICR)
	r.Write32(advregs.IMS, advregs.ICR_LSC)
	r.Write32(advregs.EIMS, all)
}
