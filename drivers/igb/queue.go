package igb

import (
	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/ring"
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

var _ adv.Hw = (*queue)(nil) // nic.Queue and xsk.Hw

func (d *Device) newQueue(idx int) (*adv.Pair, adv.PairConfig, error) {
	rx, err := ring.NewPageRxRing(d.DMA, geometry.RxDescs, adv.Size)
	if err != nil {
		return nil, adv.PairConfig{}, err
	}
	rx.SetCopybreak(DefaultCopybreak)
	q := &queue{d: d, rx: rx}
	d.queues = append(d.queues, q)
	return &q.Pair, d.PairConfig(idx, q, adv.RxSide{Descs: rx.Descs, Stats: &rx.Stats, Ring: rx, Close: rx.Close, Frame: q.frame}), nil
}

// StartRx implements xsk.Hw: it programs and enables the RX queue and
// arms its buffers (pages, or the socket's frames in zero-copy mode).
// RxMu need not be held: the queue is not polled before it starts.
func (q *queue) StartRx() error {
	if q.X.ZeroCopy() {
		return q.StartRxZC(geometry.Rx)
	}
	if err := q.M.StartRxQueue(q.Idx, q.rx.Descs, ring.HalfPage, geometry.Rx); err != nil {
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
