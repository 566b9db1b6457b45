package advmac

import (
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/advregs"
	"github.com/ether9/ether9/drivers/intr"
)

// IVARSlot says where a part keeps the IVAR entry of RX (or TX) queue q:
// the register and the entry's bit offset in it.
type IVARSlot func(q int, tx bool) (reg uint32, shift uint)

// RouteMSIX puts queue pair q's RX and TX causes on vector q and the
// other causes on vector queues, in MSI-X mode with GPIE's auto-mask, and
// returns the EIMS bits of every vector, the other causes' last.
func (m *MAC) RouteMSIX(queues int, slot IVARSlot) []uint32 {
	r := m.Regs
	r.Write32(advregs.GPIE, advregs.GPIE_NSICR|advregs.GPIE_MULTIPLE_MSIX|advregs.GPIE_EIAME|advregs.GPIE_PBA)
	ivar := map[uint32]uint32{}
	var regs []uint32
	bits := make([]uint32, queues+1)
	for q := 0; q < queues; q++ {
		for _, tx := range []bool{false, true} {
			reg, shift := slot(q, tx)
			if _, ok := ivar[reg]; !ok {
				regs = append(regs, reg)
			}
			ivar[reg] |= (advregs.IVAR_VALID | uint32(q)) << shift
		}
		bits[q] = 1 << q
	}
	for _, reg := range regs {
		r.Write32(reg, ivar[reg])
	}
	r.Write32(advregs.IVAR_MISC, (advregs.IVAR_VALID|uint32(queues))<<advregs.IVAR_MISC_OTHER_SHIFT)
	bits[queues] = 1 << queues
	return bits
}

// ITR is the EITR value for an interval between interrupts.
func ITR(interval time.Duration) uint32 {
	return uint32(interval/time.Microsecond) << advregs.EITR_INTERVAL_SHIFT & advregs.EITR_INTERVAL_MASK
}

// ArmVectors writes itr to the moderation register of every vector (bits
// are their EIMS bits, as RouteMSIX returns them), makes each auto-clear
// and auto-mask as it fires, clears pending causes, enables the
// link-change cause and arms the vectors.
func (m *MAC) ArmVectors(bits []uint32, itr uint32) {
	r := m.Regs
	var all uint32
	for v, b := range bits {
		r.Write32(advregs.EITR0+4*uint32(v), itr)
		all |= b
	}
	r.Write32(advregs.EIAC, all)
	r.Write32(advregs.EIAM, all)
	r.Read32(advregs.ICR)
	r.Write32(advregs.IMS, advregs.ICR_LSC)
	r.Write32(advregs.EIMS, all)
}

// Vector is a queue's interrupt vector as its idle poll loop uses it.
type Vector struct {
	EIMS   uint32        // the vector's bit(s) in EIMS
	Rearms atomic.Uint64 // idle re-arms
	Wakes  atomic.Uint64 // sleeps ended by an interrupt
}

// Sleep is an idle queue's wait: it reads (and so acknowledges) the
// other causes, calling onLink on a link change, re-arms its own vector
// and the other causes' (other) in EIMS, and sleeps on line until an
// interrupt or timeout. The mark is taken before the re-arm, so an
// interrupt that fires in between, and that another queue's sleep takes,
// still ends this one. A busy queue never gets here, so its vector stays
// masked and costs nothing per frame.
func (v *Vector) Sleep(m *MAC, line *intr.Line, other uint32, timeout time.Duration, onLink func()) bool {
	mark := line.Mark()
	if m.Regs.Read32(advregs.ICR)&advregs.ICR_LSC != 0 {
		onLink()
	}
	m.Regs.Write32(advregs.EIMS, v.EIMS|other)
	v.Rearms.Add(1)
	if !line.Wait(timeout, mark) {
		return false
	}
	v.Wakes.Add(1)
	return true
}
