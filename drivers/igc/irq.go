package igc

import "github.com/ether9/ether9/drivers/advregs"
import "time"

// Interrupts (I225 datasheet 7.3, registers in 8.8): MSI-X mode, queue
// pair n's RX and TX causes on vector n, the other causes (link) on the
// vector after the queues'. Every vector auto-clears its cause and
// auto-masks itself as it fires (EIAC; EIAM with GPIE.EIAME), so a queue
// busy polling takes no interrupts; when its poll loop goes idle it
// re-arms its own vector in EIMS and sleeps on the device's line, which
// every queue shares (intr.Line). EITR holds each vector to at most one
// interrupt per itrInterval.

// itrInterval is the moderation interval of every vector: about 20000
// interrupts a second, where Linux's igc starts its queue vectors.
const itrInterval = 50 * time.Microsecond

// ivarSlot is where the IVAR entry of RX (or TX) queue q lives: IVAR(q/2)
// holds queues 2n (bits 15:0) and 2n+1 (bits 31:16), each as an RX byte
// then a TX byte.
func ivarSlot(q int, tx bool) (reg uint32, shift uint) {
	shift = uint(q&1) << 4
	if tx {
		shift += 8
	}
	return advregs.IVAR0 + 4*uint32(q>>1), shift
}

// setupInterrupts routes the causes to vectors, sets moderation and
// auto-clear/auto-mask, and arms every vector.
func (d *Device) setupInterrupts() {
	r := d.regs
	r.Write32(advregs.GPIE, advregs.GPIE_NSICR|advregs.GPIE_MULTIPLE_MSIX|advregs.GPIE_EIAME|advregs.GPIE_PBA)
	var ivar [maxQueues / 2]uint32
	var all uint32
	for _, q := range d.queues {
		for _, tx := range []bool{false, true} {
			reg, shift := ivarSlot(q.idx, tx)
			ivar[(reg-advregs.IVAR0)/4] |= (advregs.IVAR_VALID | uint32(q.idx)) << shift
		}
		q.eims = 1 << q.idx
		all |= q.eims
	}
	for i, v := range ivar {
		r.Write32(advregs.IVAR0+4*uint32(i), v)
	}
	other := len(d.queues)
	r.Write32(advregs.IVAR_MISC, (advregs.IVAR_VALID|uint32(other))<<advregs.IVAR_MISC_OTHER_SHIFT)
	d.other = 1 << other
	all |= d.other
	itr := uint32(itrInterval/time.Microsecond)<<advregs.EITR_INTERVAL_SHIFT&advregs.EITR_INTERVAL_MASK | advregs.EITR_CNT_IGNR
	for v := 0; v <= other; v++ {
		r.Write32(advregs.EITR0+4*uint32(v), itr)
	}
	r.Write32(advregs.EIAC, all)
	r.Write32(advregs.EIAM, all)
	r.Read32(advregs.ICR)
	r.Write32(advregs.IMS, advregs.ICR_LSC)
	r.Write32(advregs.EIMS, all)
}

// Wait implements nic.Queue. The queue is idle: it reads (and so
// acknowledges) the other causes, acting on a link change, re-arms its
// own vector and the other causes' in EIMS, and sleeps until an interrupt
// or timeout. The mark is taken before the re-arm, so an interrupt that
// fires in between, and that another queue's sleep takes, still ends this
// wait.
func (q *queue) Wait(timeout time.Duration) bool {
	d := q.d
	if d.closed.Load() {
		return false
	}
	mark := d.line.Mark()
	if d.regs.Read32(advregs.ICR)&advregs.ICR_LSC != 0 {
		d.updateLink()
	}
	d.regs.Write32(advregs.EIMS, q.eims|d.other)
	q.rearms.Add(1)
	if !d.line.Wait(timeout, mark) {
		return false
	}
	q.wakes.Add(1)
	return true
}
