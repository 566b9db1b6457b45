package igb

import (
	"time"

	"github.com/ether9/ether9/drivers/advmac"
	"github.com/ether9/ether9/drivers/advregs"
)

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
	var bits []uint32
	itr := advmac.ITR(itrInterval)
	if d.info.Type == Mac82575 {
		// The 82575 has no GPIE and no IVAR: its EICR bits are causes,
		// which MSIXBM groups into vectors; it loads its moderation
		// counter from EITR's upper half.
		r.Write32(advregs.CTRL_EXT, r.Read32(advregs.CTRL_EXT)|CTRL_EXT_PBA_CLR|CTRL_EXT_EIAME|CTRL_EXT_IRCA)
		for _, q := range d.queues {
			bits = append(bits, EICR_RX_QUEUE0<<q.idx|EICR_TX_QUEUE0<<q.idx)
		}
		bits = append(bits, EICR_OTHER)
		for v, b := range bits {
			r.Write32(MSIXBM0+4*uint32(v), b)
		}
		itr |= itr << 16
	} else {
		bits = d.core.RouteMSIX(len(d.queues), func(q int, tx bool) (uint32, uint) { return ivarSlot(d.info.Type, q, tx) })
	}
	for i, q := range d.queues {
		q.vec.EIMS = bits[i]
	}
	d.other = bits[len(d.queues)]
	d.core.ArmVectors(bits, itr)
}
