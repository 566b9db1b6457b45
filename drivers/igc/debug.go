package igc

import "github.com/ether9/ether9/kernel"

// debugCtl runs a debug command (ring.RxInject.Ctl): inject-unmapped-rx
// arms the next RX descriptor queue 0 refills (the queue frames RSS does
// not hash land on) with an IOVA the domain does not map. The device's
// write of the frame there faults, and the driver must drop the frame
// (ring.FaultGuard) and carry on.
func (d *Device) debugCtl(arg string) error {
	q := d.queues[0]
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	busy := d.closed.Load() || q.stopped || q.x.ZeroCopy()
	return q.inject.Ctl(arg, busy, d.dma, kernel.PageSize, "igc", d.name, d.logf)
}

// armRx is writeRx for a refill while an injection waits for its
// descriptor. rxMu is held.
func (q *queue) armRx(i int, addr kernel.DMAAddr) { q.writeRx(i, q.inject.Arm(i, addr)) }
