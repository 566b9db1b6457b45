package igb

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// queue is one RX/TX queue pair. The RX side (rxMu) receives into
// half-page buffers or, when a socket holds the queue in zero-copy mode,
// into the socket's frames; the TX side (txq.Mu) sends the stack's packets,
// program TX verdicts and the socket's frames. Lock order: rxMu, txq.Mu.
type queue struct {
	d   *Device
	idx int

	rxMu    sync.Mutex
	rx      *ring.PageRxRing
	discard bool       // inside a frame that spans buffers
	x       *xsk.Queue // the socket side: program, bound socket, zero-copy frames
	guard   ring.FaultGuard
	inject  ring.RxInject // debug inject-unmapped-rx

	tx      *ring.TxRing
	txq     adv.Queue // the writer over tx, its doorbell and the TX lock
	stopped bool      // closed: refuse TX

}

var _ nic.Queue = (*queue)(nil)

func newQueue(d *Device, idx int) (*queue, error) {
	rx, err := ring.NewPageRxRing(d.dma, rxDescs, adv.Size)
	if err != nil {
		return nil, err
	}
	rx.SetCopybreak(DefaultCopybreak)
	tx, err := ring.NewTxRing(d.dma, txDescs, adv.Size, txBounceLen)
	if err != nil {
		rx.Close()
		return nil, err
	}
	q := &queue{d: d, idx: idx, rx: rx, tx: tx}
	q.guard = ring.NewFaultGuard(d.dma, fmt.Sprintf("%s q%d", d.name, idx), d.logf)
	q.txq = adv.Queue{
		Writer: adv.Writer{Ring: tx, CopyMax: adv.CopyMax, MTU: d.MTU, TSO: &d.tso},
		Regs:   d.regs, TDT: adv.QueueReg(adv.TDT, idx),
		Name: fmt.Sprintf("igb %s: queue %d", d.name, idx), Logf: d.logf,
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
	q.rx.Close()
	q.tx.Close()
}

// setEnable sets or clears ENABLE of the queue's RXDCTL or TXDCTL (reg)
// and waits until the device reports the new state.
func (q *queue) setEnable(reg uint32, on bool) error {
	return q.d.core.SetQueueEnable(reg, q.idx, on)
}

// startRx programs and enables the RX queue and arms its buffers (pages,
// or the socket's frames in zero-copy mode). rxMu need not be held: the
// queue is not polled before it starts.
func (q *queue) startRx() error {
	bsize := ring.HalfPage
	if q.x.ZeroCopy() {
		bsize = q.x.RxFrameSize()
	}
	if err := q.d.core.StartRxQueue(q.idx, q.rx.Descs, bsize, rxThresholds); err != nil {
		return err
	}
	q.discard = false
	var tail int
	if q.x.ZeroCopy() {
		q.x.Reset()
		q.x.Refill()
		tail = q.x.Tail()
	} else {
		q.rx.Reset()
		q.rx.Refill(q.writeRx)
		tail = q.rx.Tail()
	}
	q.d.core.SetRxTail(q.idx, tail)
	return nil
}

func (q *queue) writeRx(i int, addr kernel.DMAAddr) {
	adv.EncodeRxRead(q.rx.Descs.At(i), uint64(addr))
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

// close releases everything after the device stopped: a bound socket gets
// its frames back, buffers are unmapped, rings freed.
func (q *queue) close() error {
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txq.Mu.Lock()
	defer q.txq.Mu.Unlock()
	errs := []error{q.x.Unbind(false)}
	q.stopped, q.txq.Closed = true, true
	errs = append(errs, q.inject.Close(), q.rx.Close(), q.tx.Close())
	return errors.Join(errs...)
}
