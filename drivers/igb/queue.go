package igb

import (
	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
)

// Descriptor thresholds of every queue (RXDCTL, TXDCTL); never changed.
var (
	rxThresholds = adv.Thresholds{P: 8, H: 8, W: 1}
	txThresholds = adv.Thresholds{P: 8, H: 1, W: 1}
)

// queue is one RX/TX queue pair (adv.Pair). The RX side receives into
// half-page buffers or, when a socket holds the queue in zero-copy mode,
// into the socket's frames; the TX side sends the stack's packets,
// program TX verdicts and the socket's frames.
type queue struct {
	adv.Pair
	d  *Device
	rx *ring.PageRxRing
}

var (
	_ nic.Queue = (*queue)(nil)
	_ xsk.Hw    = (*queue)(nil)
)

func (d *Device) newQueue(idx int) (*adv.Pair, error) {
	rx, err := ring.NewPageRxRing(d.DMA, rxDescs, adv.Size)
	if err != nil {
		return nil, err
	}
	rx.SetCopybreak(DefaultCopybreak)
	q := &queue{d: d, rx: rx}
	c := d.PairConfig(idx, q)
	c.RxDescs, c.RxStats, c.CloseRx, c.Rx, c.Frame = rx.Descs, &rx.Stats, rx.Close, rx, q.frame
	c.TxDescs, c.TxBounceLen, c.TxThresholds = txDescs, txBounceLen, txThresholds
	c.Writer.CopyMax = adv.CopyMax
	if err := q.Init(c); err != nil {
		return nil, err
	}
	d.queues = append(d.queues, q)
	return &q.Pair, nil
}

// StartRx implements xsk.Hw: it programs and enables the RX queue and
// arms its buffers (pages, or the socket's frames in zero-copy mode).
// RxMu need not be held: the queue is not polled before it starts.
func (q *queue) StartRx() error {
	if q.X.ZeroCopy() {
		return q.StartRxZC(rxThresholds)
	}
	if err := q.M.StartRxQueue(q.Idx, q.rx.Descs, ring.HalfPage, rxThresholds); err != nil {
		return err
	}
	q.Discard = false
	q.rx.Reset()
	q.rx.Refill(q.WriteRx)
	q.M.SetRxTail(q.Idx, q.rx.Tail())
	return nil
}

// ReleaseRx implements xsk.Hw: the half pages are given up.
func (q *queue) ReleaseRx() error { return q.rx.Release() }
