package adv

import "time"

// Legacy interrupts (82576 datasheet 7.3, I225 datasheet 7.3): with
// GPIE.Multiple_MSIX clear the function signals INTx (or MSI), one line
// for every cause. ICR holds the causes (RXDW, TXDW for every queue, LSC)
// and IMS/IMC enable them; EICR holds a bit per queue, the one its IVAR
// entry names, and bit 31 (Other) for the ICR causes, enabled in
// EIMS/EIMC. Both are read to clear. INTx stays asserted while an enabled
// cause is pending, so a cause that an enable finds pending asserts it at
// once. EITR0 moderates the line.

// queueCauses are the ICR causes a sleeping queue enables: a receive
// descriptor written back and the ring running low. Not TXDW: every poll
// reclaims transmits (and a full ring reclaims before it waits), so a
// transmit's write-back need not wake a loop; with it QEMU's igb took an
// interrupt per response sent, and 0-byte GETs on one connection ran at
// 41 a second against 103 without (one boot each, same host). The parts
// still assert INTx for a sleeping queue's EICR bit, which its TX IVAR
// entry also names, so there a transmit may wake its queue.
const queueCauses = ICR_RXDW | ICR_RXDMT0

// IVARSlot says where a part keeps the IVAR entry of RX (or TX) queue q:
// the register and the entry's bit offset in it.
type IVARSlot func(q int, tx bool) (reg uint32, shift uint)

// QueueBits are the EICR bits RouteQueues gives queues 0..n-1: bit q.
func QueueBits(n int) []uint32 {
	bits := make([]uint32, n)
	for q := range bits {
		bits[q] = 1 << q
	}
	return bits
}

// RouteQueues writes each queue pair's IVAR entries, valid and naming
// EICR bit q.
func (m *MAC) RouteQueues(queues int, slot IVARSlot) {
	ivar := map[uint32]uint32{}
	var regs []uint32
	for q := range queues {
		for _, tx := range []bool{false, true} {
			reg, shift := slot(q, tx)
			if _, ok := ivar[reg]; !ok {
				regs = append(regs, reg)
			}
			ivar[reg] |= (IVAR_VALID | uint32(q)) << shift
		}
	}
	for _, reg := range regs {
		m.Regs.Write32(reg, ivar[reg])
	}
}

// ITR is the EITR value for an interval between interrupts.
func ITR(interval time.Duration) uint32 {
	return uint32(interval/time.Microsecond) << EITR_INTERVAL_SHIFT & EITR_INTERVAL_MASK
}

// Legacy is a function's INTx as its queues' poll loops share it: the
// intr.Device of the 82576 and I225 families.
type Legacy struct {
	M      *MAC
	Queue  []uint32 // each queue's EICR bits, set before the line is used
	OnLink func()   // called when a taken interrupt had LSC
}

// CauseRegs are where a part decodes ICR, IMS and IMC.
type CauseRegs struct{ ICR, IMS, IMC uint32 }

// causes returns m.Causes, or the 0x01500 block if unset.
func (m *MAC) causes() CauseRegs {
	if m.Causes.ICR == 0 {
		return CauseRegs{ICR: ICR, IMS: IMS, IMC: IMC}
	}
	return m.Causes
}

// Setup puts the function in legacy mode (gpie: the GPIE value, 0 on the
// 82575 which has none; without Multiple_MSIX, EIAC and EIAM are not
// used), moderates the line with itr in EITR0, clears pending causes and
// enables the link change and EICR's Other bit; the queue causes stay
// masked until a queue sleeps.
func (l *Legacy) Setup(gpie, itr uint32) {
	r, c := l.M.Regs, l.M.causes()
	if gpie != 0 {
		r.Write32(GPIE, gpie)
	}
	r.Write32(EIAC, 0)
	r.Write32(EIAM, 0)
	r.Write32(EITR0, itr)
	r.Write32(EIMC, ^uint32(0))
	r.Write32(c.IMC, ^uint32(0))
	r.Read32(c.ICR)
	r.Read32(EICR)
	r.Write32(c.IMS, ICR_LSC)
	r.Write32(EIMS, EICR_OTHER)
}

func (l *Legacy) bits(q uint32) uint32 {
	var b uint32
	for i, e := range l.Queue {
		if q&(1<<i) != 0 {
			b |= e
		}
	}
	return b
}

// Arm implements intr.Device: it enables the sleeping queues' EICR bits
// and the shared queue causes in ICR. A cause already pending asserts the
// line as the write lands.
func (l *Legacy) Arm(q, asleep uint32) {
	l.M.Regs.Write32(EIMS, l.bits(q))
	l.M.Regs.Write32(l.M.causes().IMS, queueCauses)
}

// Disarm implements intr.Device: it masks the queues that woke, and the
// shared queue causes once no queue sleeps, so that queues polling with
// their budget take no interrupts.
func (l *Legacy) Disarm(q, asleep uint32) {
	l.M.Regs.Write32(EIMC, l.bits(q))
	if asleep == 0 {
		l.M.Regs.Write32(l.M.causes().IMC, queueCauses)
	}
}

// Causes implements intr.Device: it reads ICR, which acknowledges the
// interrupt (INTx drops), then EICR for the queues. ICR comes first: a
// cause that lands between the two reads is in EICR, so its queue is
// woken now, and in ICR again, so it interrupts once more at worst. A
// part whose ICR read clears EICR too leaves no queue bit: then every
// queue is named, as the cause cannot be told.
func (l *Legacy) Causes() uint32 {
	icr := l.M.Regs.Read32(l.M.causes().ICR)
	eicr := l.M.Regs.Read32(EICR)
	if icr&ICR_LSC != 0 && l.OnLink != nil {
		l.OnLink()
	}
	var qs uint32
	for i, e := range l.Queue {
		if eicr&e != 0 {
			qs |= 1 << i
		}
	}
	if qs == 0 && icr&queueCauses != 0 {
		qs = 1<<len(l.Queue) - 1
	}
	return qs
}
