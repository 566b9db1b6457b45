package igb

import (
	"fmt"
	"time"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// xskHw is a queue as the socket side sees it: its register programming
// and descriptor formats (xsk.Hw). The socket side calls it with the
// queue's locks held as the xsk.Queue documents.
type xskHw queue

var _ xsk.Hw = (*xskHw)(nil)

func (h *xskHw) q() *queue { return (*queue)(h) }

func (h *xskHw) StopRx() error                      { return h.q().setEnable(adv.RXDCTL, false) }
func (h *xskHw) ReleaseRx() error                   { return h.q().rx.Release() }
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

// WriteTx queues one frame as a single advanced data descriptor.
func (h *xskHw) WriteTx(addr kernel.DMAAddr, n int) (int, bool) {
	return h.q().txq.SendFrame(addr, n)
}

// Bind implements xsk.Binder. In zero-copy mode the frame area is mapped
// once, the queue's half-page buffers are given up and the RX ring is
// re-armed from the socket's fill ring.
func (d *Device) Bind(qi int, s *xsk.Socket, m xsk.Mode) error {
	if qi < 0 || qi >= len(d.queues) {
		return fmt.Errorf("igb %s: bind queue %d: %w", d.name, qi, xsk.ErrNoQueue)
	}
	q := d.queues[qi]
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txq.Mu.Lock()
	defer q.txq.Mu.Unlock()
	if d.closed.Load() || q.stopped {
		return fmt.Errorf("igb %s: bind queue %d: %w", d.name, qi, xsk.ErrClosed)
	}
	if err := q.x.Bind(s, m, d.MTU()+ethHdrLen+vlanTagLen); err != nil {
		return fmt.Errorf("igb %s: bind queue %d: %w", d.name, qi, err)
	}
	d.logf("%s: queue %d bound to a socket (%v, %d frames)", d.name, qi, m, s.Umem.Frames())
	return nil
}

// Unbind implements xsk.Binder.
func (d *Device) Unbind(qi int) error {
	if qi < 0 || qi >= len(d.queues) {
		return fmt.Errorf("igb %s: unbind queue %d: %w", d.name, qi, xsk.ErrNoQueue)
	}
	q := d.queues[qi]
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txq.Mu.Lock()
	defer q.txq.Mu.Unlock()
	if q.x.Socket() == nil {
		return fmt.Errorf("igb %s: unbind queue %d: no socket bound", d.name, qi)
	}
	if err := q.x.Unbind(!d.closed.Load() && !q.stopped); err != nil {
		return fmt.Errorf("igb %s: queue %d: %w", d.name, qi, err)
	}
	return nil
}

// SetProgram implements xsk.Binder.
func (d *Device) SetProgram(qi int, p xsk.Program) error {
	if qi < 0 || qi >= len(d.queues) {
		return fmt.Errorf("igb %s: program on queue %d: %w", d.name, qi, xsk.ErrNoQueue)
	}
	d.queues[qi].x.SetProgram(p)
	return nil
}
