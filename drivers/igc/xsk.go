package igc

import (
	"errors"
	"fmt"
	"time"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// A queue taken over by a socket. In zero-copy mode the RX ring is armed
// with the socket's frames and a frame stays in the application's buffer:
// it is neither built around nor constructed from, the device writes it at
// the frame's start and the program and the socket see it there. In copy
// mode the ring keeps its own buffers and, a program being attached (the
// socket's default redirects everything), constructs.

// xskHw is a queue as the socket side sees it (xsk.Hw).
type xskHw queue

var _ xsk.Hw = (*xskHw)(nil)

func (h *xskHw) q() *queue { return (*queue)(h) }

func (h *xskHw) StopRx() error                      { return h.q().setEnable(adv.RXDCTL, false) }
func (h *xskHw) StartRx() error                     { return h.q().startRx() }
func (h *xskHw) StopTx() error                      { return h.q().setEnable(adv.TXDCTL, false) }
func (h *xskHw) StartTx() error                     { return h.q().startTxLocked() }
func (h *xskHw) WriteRx(i int, addr kernel.DMAAddr) { h.q().writeRx(i, addr) }
func (h *xskHw) SendCopy(frame []byte) bool         { return h.q().txq.SendCopy(frame) }
func (h *xskHw) TxFree() int                        { return h.q().tx.Free() }
func (h *xskHw) ReclaimTx()                         { h.q().txq.ReclaimLocked() }
func (h *xskHw) Wait(timeout time.Duration) bool    { return h.q().Wait(timeout) }

func (h *xskHw) WaitFor(timeout time.Duration, cond func() bool) bool {
	return h.q().d.core.WaitFor(timeout, cond)
}

func (h *xskHw) Receive(pkts []nic.RxPacket) (n, taken int) {
	return h.q().Receive(pkts)
}

// ReleaseRx gives up every buffer of the ring's own, kept chunk mappings
// included; the stack keeps the views it holds.
func (h *xskHw) ReleaseRx() error {
	r := h.q().rx
	errs := []error{r.reset(Construct)}
	for i := range r.slots {
		errs = append(errs, r.giveUp(&r.slots[i]))
	}
	return errors.Join(errs...)
}

// WriteTx queues one frame as a single advanced data descriptor.
func (h *xskHw) WriteTx(addr kernel.DMAAddr, n int) (int, bool) {
	return h.q().txq.SendFrame(addr, n)
}

// startRxZC programs the RX queue for the socket's frames, enables it and
// arms it from the fill ring; the frame starts at the buffer's start.
func (q *queue) startRxZC() error {
	q.rx.Descs.Clear()
	if err := q.d.core.StartRxQueue(q.idx, q.rx.Descs, q.x.RxFrameSize(), rxThresholds); err != nil {
		return err
	}
	q.discard = false
	q.x.Reset()
	q.x.Refill()
	q.d.core.SetRxTail(q.idx, q.x.Tail())
	return nil
}

// cleanZC is the RX loop while the socket's frames are armed; rxMu is
// held.
func (q *queue) cleanZC(pkts []nic.RxPacket) (n, taken int) {
	z := adv.ZeroCopy{X: q.x, Stats: &q.rx.Stats, Tx: &q.txq}
	n, taken, moved := z.Clean(q.rx.Descs, pkts, &q.discard, q.prog)
	if moved {
		q.d.core.SetRxTail(q.idx, q.x.Tail())
	}
	return n, taken
}

// serveSocket sends what the bound socket's TX ring holds and completes
// finished sends; txq.Mu is held.
func (q *queue) serveSocket(budget int) {
	if q.x.Socket() == nil || q.txq.Closed {
		return
	}
	q.x.Send(budget)
	q.txq.ReclaimLocked()
}

// syncProgram caches the program frames run through (the socket's default
// on a bound queue); rxMu is held.
func (q *queue) syncProgram() { q.prog = q.x.Program() }

var _ xsk.Binder = (*Device)(nil)

// NumQueues implements xsk.Binder.
func (d *Device) NumQueues() int { return len(d.queues) }

// Bind implements xsk.Binder. In zero-copy mode the frame area is mapped
// once, the ring's own buffers are given up and the RX ring is armed from
// the socket's fill ring; in copy mode the ring re-decides its layout, as
// a program is now attached.
func (d *Device) Bind(i int, s *xsk.Socket, m xsk.Mode) error {
	if i < 0 || i >= len(d.queues) {
		return fmt.Errorf("igc %s: bind queue %d of %d: %w", d.name, i, len(d.queues), xsk.ErrNoQueue)
	}
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	q := d.queues[i]
	if err := q.bind(s, m); err != nil {
		return fmt.Errorf("igc %s: bind queue %d: %w", d.name, i, err)
	}
	if err := q.relayout(); err != nil {
		return fmt.Errorf("igc %s: bind queue %d: %w", d.name, i, err)
	}
	d.logf("%s: queue %d bound to a socket (%v, %d frames)", d.name, i, m, s.Umem.Frames())
	return nil
}

func (q *queue) bind(s *xsk.Socket, m xsk.Mode) error {
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txq.Mu.Lock()
	defer q.txq.Mu.Unlock()
	if q.d.closed.Load() || q.stopped {
		return xsk.ErrClosed
	}
	err := q.x.Bind(s, m, maxFrame(q.d.MTU()))
	q.syncProgram()
	return err
}

// Unbind implements xsk.Binder: the queue goes back to its own buffers
// and re-decides its layout.
func (d *Device) Unbind(i int) error {
	if i < 0 || i >= len(d.queues) {
		return fmt.Errorf("igc %s: unbind queue %d of %d: %w", d.name, i, len(d.queues), xsk.ErrNoQueue)
	}
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	q := d.queues[i]
	if err := q.unbind(); err != nil {
		return fmt.Errorf("igc %s: unbind queue %d: %w", d.name, i, err)
	}
	if err := q.relayout(); err != nil {
		return fmt.Errorf("igc %s: unbind queue %d: %w", d.name, i, err)
	}
	return nil
}

func (q *queue) unbind() error {
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txq.Mu.Lock()
	defer q.txq.Mu.Unlock()
	if q.x.Socket() == nil {
		return errors.New("no socket bound")
	}
	err := q.x.Unbind(!q.d.closed.Load() && !q.stopped)
	q.syncProgram()
	return err
}

// SetProgram attaches packet program p to queue i (nil detaches it: the
// default, none, or the bound socket's redirect). A program looks at
// frames in place, so the ring re-decides its layout: with a program it
// constructs.
func (d *Device) SetProgram(i int, p xsk.Program) error {
	if i < 0 || i >= len(d.queues) {
		return fmt.Errorf("igc %s: program on queue %d of %d: %w", d.name, i, len(d.queues), xsk.ErrNoQueue)
	}
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	q := d.queues[i]
	q.rxMu.Lock()
	q.x.SetProgram(p)
	q.syncProgram()
	q.rxMu.Unlock()
	return q.relayout()
}
