package e1000e

import (
	"errors"
	"fmt"
	"time"

	"github.com/ether9/ether9/drivers/ring"
)

// Ring lengths a running device may be given. RDLEN and TDLEN count bytes
// in units of 128, so a ring of 16-byte descriptors is a multiple of 8;
// the bounds are the family's usual ones (a TSO packet needs far fewer
// than the minimum, and past the maximum the rings only add latency).
const (
	ringAlign = 128 / descSize
	minDescs  = 64
	maxDescs  = 4096

	// dmaSettle is how long in-flight descriptor and buffer DMA gets to
	// land after RCTL.EN or TCTL.EN is cleared.
	dmaSettle = 10 * time.Millisecond
	// txDrainTimeout bounds the wait for queued frames to leave before
	// the TX ring is torn down.
	txDrainTimeout = 50 * time.Millisecond
)

func (d *Device) checkRingLen(what string, n int) error {
	if n < minDescs || n > maxDescs || n%ringAlign != 0 {
		return fmt.Errorf("e1000e %s: %s %d: want a multiple of %d in %d..%d", d.name, what, n, ringAlign, minDescs, maxDescs)
	}
	return nil
}

// stopRx clears RCTL.EN and keeps it clear until setupRx: a filter or MTU
// change meanwhile rewrites RCTL without enabling the receiver.
func (d *Device) stopRx() {
	d.filterMu.Lock()
	d.rxStopped = true
	d.regs.Write32(RCTL, d.rctlFor(int(d.mtu.Load())))
	d.filterMu.Unlock()
	d.regs.Read32(STATUS) // flush the posted write
}

// SetRxRing replaces the receive ring with one of n descriptors: the new
// ring is allocated first (on failure nothing changes), the receiver is
// stopped, the old ring's buffers are unmapped and freed, and the new ring
// is programmed and armed. Frames the device wrote but the driver had not
// yet polled are dropped with the old ring.
func (d *Device) SetRxRing(n int) error {
	if err := d.checkRingLen("rxring", n); err != nil {
		return err
	}
	q := &d.q
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	if d.closed.Load() {
		return fmt.Errorf("e1000e %s: rxring: device closed", d.name)
	}
	if n == q.rx.Descs.Len() {
		return nil
	}
	rx, err := ring.NewRxRing(d.dma, n, descSize, rxBufSize)
	if err != nil {
		return fmt.Errorf("e1000e %s: rxring %d: %w", d.name, n, err)
	}
	rx.SetCopybreak(q.rx.Copybreak())
	rx.SetMode(q.rx.Mode())

	d.stopRx()
	d.clock.Sleep(dmaSettle)
	q.dropUnpolled()
	old := q.rx
	old.Stats.Each(q.rxRetired.add)
	errOld := errors.Join(old.Close(), q.inject.Close())
	q.rx = rx
	q.setupRx()
	d.logf("%s: rx ring %d -> %d descriptors", d.name, old.Descs.Len(), n)
	if errOld != nil {
		return fmt.Errorf("e1000e %s: rxring %d: freeing the old ring: %w", d.name, n, errOld)
	}
	return nil
}

// SetTxRing replaces the transmit ring with one of n descriptors: the new
// ring is allocated first (on failure nothing changes), queued frames get
// txDrainTimeout to leave, the transmitter is stopped, every packet still
// held is unmapped and released, and the new ring is programmed.
func (d *Device) SetTxRing(n int) error {
	if err := d.checkRingLen("txring", n); err != nil {
		return err
	}
	q := &d.q
	q.txMu.Lock()
	defer q.txMu.Unlock()
	if d.closed.Load() {
		return fmt.Errorf("e1000e %s: txring: device closed", d.name)
	}
	if n == q.tx.Descs.Len() {
		return nil
	}
	tx, err := ring.NewTxRing(d.dma, n, descSize, txBounceLen)
	if err != nil {
		return fmt.Errorf("e1000e %s: txring %d: %w", d.name, n, err)
	}
	r := d.regs
	if !d.waitFor(txDrainTimeout, func() bool { return r.Read32(TDH) == r.Read32(TDT) }) {
		d.logf("%s: txring: %d descriptors still queued, dropped", d.name, q.tx.InFlight())
	}
	r.Write32(TCTL, r.Read32(TCTL)&^TCTL_EN)
	r.Read32(STATUS)
	d.clock.Sleep(dmaSettle)
	old := q.tx
	old.Stats.Each(q.txRetired.add)
	errOld := old.Close()
	q.tx = tx
	q.setupTx()
	d.logf("%s: tx ring %d -> %d descriptors", d.name, old.Descs.Len(), n)
	if errOld != nil {
		return fmt.Errorf("e1000e %s: txring %d: freeing the old ring: %w", d.name, n, errOld)
	}
	return nil
}

// Reset resets the running controller (CTRL.RST) and brings it up again as
// probe does, keeping what the driver was told: station address, MTU,
// copybreak, TSO mode, multicast groups, allmulti and promiscuous. Packets
// in flight are dropped; the device's counters are gathered first, as the
// reset clears them.
func (d *Device) Reset() error {
	q := &d.q
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txMu.Lock()
	defer q.txMu.Unlock()
	if d.closed.Load() {
		return fmt.Errorf("e1000e %s: reset: device closed", d.name)
	}
	d.hw.Gather(d.regs)
	err := d.reset() // stops RX and TX and lets their DMA land first
	q.dropUnpolled()
	if err != nil {
		return fmt.Errorf("reset: %w", err) // err names the device
	}
	if err := q.inject.Close(); err != nil {
		d.logf("%s: reset: %v", d.name, err)
	}
	d.writeRAR0(d.mac)
	d.up()
	d.logf("%s: reset, link %v", d.name, *d.link.Load())
	return nil
}

// retired holds the counters of rings that were replaced, so the driver's
// totals do not go back when a ring is resized. Guarded by the ring's
// mutex.
type retired map[string]uint64

func (r *retired) add(name string, v uint64) {
	if *r == nil {
		*r = make(retired)
	}
	(*r)[name] += v
}

// dropUnpolled counts the frames the device wrote back that no poll took
// before the ring was torn down or reset. rxMu is held and the receiver
// is stopped.
func (q *queue) dropUnpolled() {
	rx := q.rx
	n := 0
	for i, k := rx.Clean(), 0; k < rx.Armed(); i, k = rx.Descs.Next(i), k+1 {
		if rxDone(rx.Descs.At(i)) {
			n++
		}
	}
	if n > 0 {
		q.rxReconfigDrops.Add(uint64(n))
		q.d.logf("%s: rx: %d frames not yet polled dropped with the ring", q.d.name, n)
	}
}
