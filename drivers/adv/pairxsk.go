package adv

import (
	"errors"
	"time"

	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// What the socket side asks of a queue (xsk.Hw), written once for both
// families over the Pair's MAC, descriptors and TX queue, and the
// Pair's part of binding a socket and attaching a program.

// StopRx implements xsk.Hw: RXDCTL.ENABLE cleared, the device agreeing.
func (p *Pair) StopRx() error { return p.M.SetQueueEnable(RXDCTL, p.Idx, false) }

// StopTx implements xsk.Hw: TXDCTL.ENABLE cleared, the device agreeing.
func (p *Pair) StopTx() error { return p.M.SetQueueEnable(TXDCTL, p.Idx, false) }

// StartTx implements xsk.Hw: the TX ring emptied, the queue programmed and
// enabled; Txq.Mu is held.
func (p *Pair) StartTx() error {
	if err := p.Txq.Reset(); err != nil {
		return err
	}
	return p.M.StartTxQueue(p.Idx, p.Tx.Descs, p.txThresholds)
}

// WriteRx implements xsk.Hw: descriptor i armed with the buffer at addr.
func (p *Pair) WriteRx(i int, addr kernel.DMAAddr) { EncodeRxRead(p.RxDescs.At(i), uint64(addr)) }

// SendCopy implements xsk.Hw (Queue.SendCopy).
func (p *Pair) SendCopy(frame []byte) bool { return p.Txq.SendCopy(frame) }

// TxFree implements xsk.Hw.
func (p *Pair) TxFree() int { return p.Tx.Free() }

// ReclaimTx implements xsk.Hw (Queue.ReclaimLocked).
func (p *Pair) ReclaimTx() { p.Txq.ReclaimLocked() }

// WaitFor implements xsk.Hw on the MAC's clock.
func (p *Pair) WaitFor(timeout time.Duration, cond func() bool) bool {
	return p.M.WaitFor(timeout, cond)
}

// WriteTx implements xsk.Hw: one frame as a single advanced data
// descriptor.
func (p *Pair) WriteTx(addr kernel.DMAAddr, n int) (int, bool) { return p.Txq.SendFrame(addr, n) }

// Bind gives the queue to s in mode m, frames up to maxFrame bytes.
func (p *Pair) Bind(s *xsk.Socket, m xsk.Mode, maxFrame int) error {
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	p.Txq.Mu.Lock()
	defer p.Txq.Mu.Unlock()
	if p.Closed.Load() || p.Stopped {
		return xsk.ErrClosed
	}
	err := p.X.Bind(s, m, maxFrame)
	p.prog = p.X.Program()
	return err
}

// Unbind takes the queue back from its socket.
func (p *Pair) Unbind() error {
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	p.Txq.Mu.Lock()
	defer p.Txq.Mu.Unlock()
	if p.X.Socket() == nil {
		return errors.New("no socket bound")
	}
	err := p.X.Unbind(!p.Closed.Load() && !p.Stopped)
	p.prog = p.X.Program()
	return err
}

// SetProgram attaches packet program prog (nil: the default).
func (p *Pair) SetProgram(prog xsk.Program) {
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	p.X.SetProgram(prog)
	p.prog = p.X.Program()
}
