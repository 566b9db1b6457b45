package e1000e

import "time"

// irqCauses are the interrupt causes the driver takes: a received frame
// (RXT0, with RDTR 0 at once), the ring running low (RXDMT0) or over
// (RXO) and a link change (LSC). Not TXDW: transmitted buffers are
// reclaimed by every poll and by a sender that finds the ring full, so
// a write-back interrupt would only wake the loop to find nothing to
// receive, once for every frame a request or an ACK stream sends.
const irqCauses = ICR_RXT0 | ICR_RXO | ICR_RXDMT0 | ICR_LSC

// itrInterval is ITR's minimum gap between interrupts, in 256 ns units:
// 195 is 50 us, at most 20000 interrupts a second, the rate Linux's
// driver starts at. It bounds the interrupt load of a busy link and adds
// at most 50 us to an idle one's first frame.
const itrInterval = 195

// enableIRQ programs the throttle, clears stale causes and enables the
// causes, as the device comes up. The queue's rxMu and txMu are held.
func (d *Device) enableIRQ() {
	d.regs.Write32(ITR, itrInterval)
	d.regs.Read32(ICR)
	d.regs.Write32(IMS, irqCauses)
}

// Wait implements nic.Queue: the poll loop's sleep, NAPI-style. The
// causes are enabled only while it sleeps and disabled again when it
// wakes, so a loop polling with its budget takes no interrupts. The loop
// sleeps after a poll found the ring empty; that poll read ICR, which
// cleared the causes latched before it, and a frame that lands after it
// latches RXT0 while the causes are disabled: the write of IMS then
// asserts the interrupt at once (ICR & IMS is not zero), so that frame
// does not wait for the next.
func (q *queue) Wait(timeout time.Duration) bool {
	d := q.d
	if d.closed.Load() {
		return false
	}
	d.regs.Write32(IMS, irqCauses)
	woken := d.irq.Wait(timeout)
	if woken {
		d.regs.Write32(IMC, irqCauses)
		q.irqStats.Wakes.Add(1)
	} else {
		q.irqStats.Timeouts.Add(1)
	}
	return woken
}
