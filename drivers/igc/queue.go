package igc

import (
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/adv"
)

// queue is one RX/TX queue pair (adv.Pair) with the ring that builds or
// constructs its frames.
type queue struct {
	adv.Pair
	d           *Device
	rx          *rxRing
	built       atomic.Uint64
	constructed atomic.Uint64
	relayouts   atomic.Uint64
}

var _ adv.Hw = (*queue)(nil) // nic.Queue and xsk.Hw

func (d *Device) newQueue(idx int) (*adv.Pair, adv.PairConfig, error) {
	rx, err := newRxRing(d.DMA, geometry.RxDescs, adv.Size)
	if err != nil {
		return nil, adv.PairConfig{}, err
	}
	q := &queue{d: d, rx: rx}
	d.queues = append(d.queues, q)
	own := ownRx{rx, q}
	return &q.Pair, d.PairConfig(idx, q, adv.RxSide{Descs: rx.Descs, Stats: &rx.Stats, Ring: own, Close: rx.close, Frame: q.frame}), nil
}

// layout is what the ring should use now.
func (q *queue) layout() Layout {
	return chooseLayout(q.d.build.Load(), q.X.Program() != nil, q.d.MTU())
}

// StartRx implements xsk.Hw: it programs and enables the RX queue with
// the layout the seed's rule picks and arms its buffers; RxMu is held or
// the queue not yet polled.
func (q *queue) StartRx() error {
	if q.X.ZeroCopy() {
		return q.StartRxZC(geometry.Rx)
	}
	if err := q.rx.reset(q.layout()); err != nil {
		return fmt.Errorf("igc: rx queue %d: %w", q.Idx, err)
	}
	// The buffer is 2 KiB; with the build layout the frame starts
	// rxHeadroom in, and RLPML keeps it inside the half.
	if err := q.M.StartRxQueue(q.Idx, q.rx.Descs, rxBufLen, geometry.Rx); err != nil {
		return err
	}
	q.Discard = false
	q.rx.refill(q.WriteRx)
	q.M.SetRxTail(q.Idx, q.rx.Tail())
	return nil
}

// relayout stops the RX queue, re-decides its layout and starts it again
// if the layout changed. Frames the device completed before the stop are
// dropped with the old layout's ring.
func (q *queue) relayout() error {
	q.RxMu.Lock()
	defer q.RxMu.Unlock()
	if q.Stopped || q.X.ZeroCopy() || q.layout() == q.rx.layout {
		return nil
	}
	if err := q.StopRx(); err != nil {
		return err
	}
	q.relayouts.Add(1)
	return q.StartRx()
}

// Layout is the RX layout queue i uses now.
func (d *Device) Layout(i int) (Layout, error) {
	if i < 0 || i >= len(d.queues) {
		return 0, fmt.Errorf("igc %s: queue %d of %d", d.Core.Name, i, len(d.queues))
	}
	q := d.queues[i]
	q.RxMu.Lock()
	defer q.RxMu.Unlock()
	return q.rx.layout, nil
}
