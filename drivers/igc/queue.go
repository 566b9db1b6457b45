package igc

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// queue is one RX/TX queue pair. Lock order: rxMu, txq.Mu.
type queue struct {
	d   *Device
	idx int

	rxMu        sync.Mutex
	rx          *rxRing
	discard     bool        // inside a frame that spans buffers
	x           *xsk.Queue  // the socket side: program, bound socket, zero-copy frames
	prog        xsk.Program // x's program, cached for the RX loop; nil: none
	stopped     bool        // closed: no more polling
	guard       ring.FaultGuard
	inject      ring.RxInject // debug inject-unmapped-rx
	built       atomic.Uint64
	constructed atomic.Uint64
	relayouts   atomic.Uint64

	tx  *ring.TxRing
	txq adv.Queue // the writer over tx, its doorbell and the TX lock

}

var _ nic.Queue = (*queue)(nil)

func newQueue(d *Device, idx int) (*queue, error) {
	rx, err := newRxRing(d.dma, rxDescs, adv.Size)
	if err != nil {
		return nil, err
	}
	tx, err := ring.NewTxRing(d.dma, txDescs, adv.Size, txBounceLen)
	if err != nil {
		rx.close()
		return nil, err
	}
	q := &queue{d: d, idx: idx, rx: rx, tx: tx}
	q.guard = ring.NewFaultGuard(d.dma, fmt.Sprintf("%s q%d", d.name, idx), d.logf)
	q.txq = adv.Queue{
		Writer: adv.Writer{Ring: tx, CopyMax: adv.CopyMax, MTU: d.MTU, TSO: &d.tso},
		Regs:   d.regs, TDT: adv.QueueReg(adv.TDT, idx),
		Name: fmt.Sprintf("igc %s: queue %d", d.name, idx), Logf: d.logf,
	}
	if q.x, err = xsk.NewQueue((*xskHw)(q), d.dma, xsk.QueueConfig{RxDescs: rxDescs, TxDescs: txDescs, MaxTx: txBounceLen}); err != nil {
		q.free()
		return nil, err
	}
	q.txq.Complete = q.x.Complete
	return q, nil
}

// Transmit implements nic.Queue (adv.Queue.Transmit).
func (q *queue) Transmit(pkts []*nic.TxPacket) (int, error) { return q.txq.Transmit(pkts) }

// Reclaim implements nic.Queue (adv.Queue.Reclaim).
func (q *queue) Reclaim() int { return q.txq.Reclaim() }

func (q *queue) free() {
	q.rx.close()
	q.tx.Close()
}

// layout is what the ring should use now.
func (q *queue) layout() Layout {
	return chooseLayout(q.d.build.Load(), q.x.Program() != nil, q.d.MTU())
}

// setEnable sets or clears ENABLE of the queue's RXDCTL or TXDCTL (reg)
// and waits for the device to agree.
func (q *queue) setEnable(reg uint32, on bool) error {
	return q.d.core.SetQueueEnable(reg, q.idx, on)
}

// startRx programs and enables the RX queue with the layout the seed's
// rule picks and arms its buffers; rxMu is held or the queue not yet
// polled.
func (q *queue) startRx() error {
	if q.x.ZeroCopy() {
		return q.startRxZC()
	}
	if err := q.rx.reset(q.layout()); err != nil {
		return fmt.Errorf("igc: rx queue %d: %w", q.idx, err)
	}
	// The buffer is 2 KiB; with the build layout the frame starts
	// rxHeadroom in, and RLPML keeps it inside the half.
	if err := q.d.core.StartRxQueue(q.idx, q.rx.Descs, rxBufLen, rxThresholds); err != nil {
		return err
	}
	q.discard = false
	q.rx.refill(q.writeRx)
	q.d.core.SetRxTail(q.idx, q.rx.Tail())
	return nil
}

// relayout stops the RX queue, re-decides its layout and starts it again
// if the layout changed. Frames the device completed before the stop are
// dropped with the old layout's ring.
func (q *queue) relayout() error {
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	if q.stopped || q.x.ZeroCopy() || q.layout() == q.rx.layout {
		return nil
	}
	if err := q.setEnable(adv.RXDCTL, false); err != nil {
		return err
	}
	q.relayouts.Add(1)
	return q.startRx()
}

func (q *queue) writeRx(i int, addr kernel.DMAAddr) {
	adv.EncodeRxRead(q.rx.Descs.At(i), uint64(addr))
}

// Layout is the RX layout queue i uses now.
func (d *Device) Layout(i int) (Layout, error) {
	if i < 0 || i >= len(d.queues) {
		return 0, fmt.Errorf("igc %s: queue %d of %d", d.name, i, len(d.queues))
	}
	q := d.queues[i]
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	return q.rx.layout, nil
}

// startTx programs and enables the TX queue.
func (q *queue) startTx() error {
	q.txq.Mu.Lock()
	defer q.txq.Mu.Unlock()
	return q.startTxLocked()
}

// startTxLocked is startTx with txq.Mu held.
func (q *queue) startTxLocked() error {
	if err := q.txq.Reset(); err != nil {
		return err
	}
	return q.d.core.StartTxQueue(q.idx, q.tx.Descs, txThresholds)
}

// close releases everything after the device stopped.
func (q *queue) close() error {
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txq.Mu.Lock()
	defer q.txq.Mu.Unlock()
	err := q.x.Unbind(false)
	q.stopped, q.txq.Closed = true, true
	return errors.Join(err, q.inject.Close(), q.rx.close(), q.tx.Close())
}
