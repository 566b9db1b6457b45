package igc

import (
	"time"

	"github.com/ether9/ether9/drivers/advmac"
	"github.com/ether9/ether9/drivers/advregs"
)

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
	bits := d.core.RouteMSIX(len(d.queues), ivarSlot)
	for i, q := range d.queues {
		q.vec.EIMS = bits[i]
	}
	d.other = bits[len(d.queues)]
	d.core.ArmVectors(bits, advmac.ITR(itrInterval)|advregs.EITR_CNT_IGNR)
}

// Wait implements nic.Queue: an idle queue re-arms its vector and sleeps
// on the device's line (advmac.Vector.Sleep).
func (q *queue) Wait(timeout time.Duration) bool {
	d := q.d
	if d.closed.Load() {
		return false
	}
	return q.vec.Sleep(&d.core, d.line, d.other, timeout, d.updateLink)
}
