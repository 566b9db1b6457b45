package adv

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// Pair is what an igb and an igc RX/TX queue pair share: the RX lock and
// the state the receive loop keeps under it, the socket side, the
// DMA-fault rule and its debug injection, and the TX ring with its
// writer. A driver's queue embeds it beside its own RX ring, so that the
// receive loop (Receive) and the socket side's register programming
// (xsk.Hw) are written once: the driver adds its Frame step, ReleaseRx,
// StartRx and Wait. Lock order: RxMu, Txq.Mu.
type Pair struct {
	M   *MAC
	Idx int

	RxMu    sync.Mutex
	RxDescs *ring.Descs   // the RX ring's descriptors
	RxStats *ring.RxStats // the RX ring's counters
	closeRx func() error  // frees the RX ring's buffers and descriptors
	hw      Hw            // the queue embedding the Pair
	rx      OwnRx         // the queue's own buffers
	frame   Frame         // the driver's step for a good frame in rx
	Discard bool          // inside a frame that spans buffers
	X       *xsk.Queue    // the socket side: program, bound socket, zero-copy frames
	prog    xsk.Program   // X's program, cached for the RX loop; nil: none
	guard   ring.FaultGuard
	inject  ring.RxInject // debug inject-unmapped-rx
	Stopped bool          // closed: no more polling, binding or TX
	Closed  *atomic.Bool  // the device's: closed

	Tx           *ring.TxRing
	Txq          Queue // the writer over Tx, its doorbell and the TX lock
	txThresholds Thresholds
}

// Hw is a driver's queue: the stack's (nic.Queue) and the socket side's
// (xsk.Hw), the Pair it embeds giving most of both.
type Hw interface {
	nic.Queue
	xsk.Hw
}

// Geometry is a family's queue pair as its rings and registers are set
// up, never changed: the rings' sizes in descriptors, the TX bounce bytes
// per descriptor (the longest frame a socket sends, too), and the
// descriptor thresholds (RXDCTL, TXDCTL).
type Geometry struct {
	RxDescs, TxDescs int
	TxBounceLen      int
	Rx, Tx           Thresholds
}

// RxSide is a queue's RX ring, made by the driver, as the Pair reaches
// it.
type RxSide struct {
	Descs *ring.Descs
	Stats *ring.RxStats
	Ring  OwnRx        // as Receive drives it
	Close func() error // frees it
	Frame Frame        // the driver's step for a good frame in it
}

// PairConfig is what a Pair is made of (Port.PairConfig).
type PairConfig struct {
	MAC    *MAC
	Idx    int
	DMA    kernel.DMA
	Closed *atomic.Bool
	Geo    Geometry
	Rx     RxSide
	Writer Writer // but its Ring, the TX ring made here
	// Hw is the queue that embeds the Pair: the stack and the socket
	// side drive it.
	Hw Hw
}

// Init makes the TX ring and the socket side and sets p up over them;
// on an error the RX ring is freed too.
func (p *Pair) Init(c PairConfig) error {
	m, g := c.MAC, c.Geo
	tx, err := ring.NewTxRing(c.DMA, g.TxDescs, Size, g.TxBounceLen)
	if err != nil {
		return errors.Join(err, c.Rx.Close())
	}
	*p = Pair{M: m, Idx: c.Idx, RxDescs: c.Rx.Descs, RxStats: c.Rx.Stats, closeRx: c.Rx.Close, hw: c.Hw, rx: c.Rx.Ring, frame: c.Rx.Frame, Closed: c.Closed, Tx: tx, txThresholds: g.Tx}
	p.guard = ring.NewFaultGuard(c.DMA, fmt.Sprintf("%s q%d", m.Name, c.Idx), m.Logf)
	p.Txq = Queue{
		Writer: c.Writer,
		Regs:   m.Regs, TDT: QueueReg(TDT, c.Idx),
		Name: fmt.Sprintf("%s %s: queue %d", m.Driver, m.Name, c.Idx), Logf: m.Logf,
	}
	p.Txq.Ring = tx
	x, err := xsk.NewQueue(c.Hw, c.DMA, xsk.QueueConfig{RxDescs: c.Rx.Descs.Len(), TxDescs: g.TxDescs, MaxTx: g.TxBounceLen})
	if err != nil {
		return errors.Join(err, tx.Close(), c.Rx.Close())
	}
	p.X = x
	p.Txq.Complete = x.Complete
	return nil
}

// OwnRx is a queue's ring of its own buffers as Receive drives it.
type OwnRx interface {
	ring.RxCursor
	Tail() int
	Drop(reason ring.DropReason)
	// Refill re-arms the descriptors cleaned, writing each with write,
	// and reports whether any was.
	Refill(write func(i int, addr kernel.DMAAddr)) bool
}

// Frame is a driver's step for one good frame in its own buffer: the
// packet program's verdict prog (nil: none) acted on, and for a frame
// passed, pkts[n] filled; it reports whether it filled p.
type Frame func(wb Rx, prog xsk.Program, p *nic.RxPacket) bool

// Receive implements nic.Queue: it cleans up to len(pkts) completed RX
// descriptors (ring.CleanRx), the zero-copy loop's while a socket's
// frames are armed, else the driver's Frame on each good frame, fills
// pkts with the frames passed, re-arms the ring and writes the tail
// once, judges the batch by the DMA fault count (a device marks a
// descriptor done even when its data write was refused), then serves a
// bound socket's TX ring and completions. taken counts the frames
// redirected, sent back or dropped by a program too, so a poll loop stays
// busy while a socket takes the traffic.
func (p *Pair) Receive(pkts []nic.RxPacket) (n, taken int) {
	if p.Closed.Load() {
		return 0, 0
	}
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	if p.Closed.Load() || p.Stopped {
		return 0, 0
	}
	if p.X.ZeroCopy() {
		n, taken = p.cleanZC(pkts)
	} else {
		r, prog, frame := p.rx, p.prog, p.frame
		start := r.Clean()
		taken = ring.CleanRx(p.RxDescs, r, FrameErrors, len(pkts), &p.Discard, r.Drop, func(desc []byte) {
			if frame(DecodeRx(desc), prog, &pkts[n]) {
				n++
			}
		})
		if r.Refill(p.RxWriter(start, taken)) {
			p.M.SetRxTail(p.Idx, r.Tail())
		}
	}
	return p.endPoll(pkts, n), taken
}

// RxReady implements nic.RxReadier: whether the device has written back
// the next receive descriptor, read from the ring in memory alone. A poll
// loop spinning after a burst asks it between yields instead of calling
// Receive, which reads the DMA fault count and takes the TX lock for the
// doorbell: under emulation every register access holds up the device
// model, and a spin that polled got 4-7 frames a poll where e1000e, asking
// its ring, got 20 (igb on its interrupt paid 1.3 times polling's QEMU CPU
// per MB received). With a socket bound, Receive serves its TX ring too,
// so the answer is always yes.
func (p *Pair) RxReady() bool {
	if p.Closed.Load() {
		return false
	}
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	switch {
	case p.Closed.Load() || p.Stopped:
		return false
	case p.X.Socket() != nil:
		return true
	}
	return ring.RxWaiting(p.RxDescs, p.rx)
}

// RxRing is the RX ring's state as the driver keeps it: the descriptors
// the device owns, the next one to clean and the tail last written. These
// are gauges: a stalled receiver's report tells from them a ring left
// without buffers from one whose frames nobody polls.
func (p *Pair) RxRing() (armed, clean, tail int) {
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	return p.rx.Armed(), p.rx.Clean(), p.rx.Tail()
}

// Transmit implements nic.Queue (Queue.Transmit).
func (p *Pair) Transmit(pkts []*nic.TxPacket) (int, error) { return p.Txq.Transmit(pkts) }

// Reclaim implements nic.Queue (Queue.Reclaim).
func (p *Pair) Reclaim() int { return p.Txq.Reclaim() }

// OpenTx is StartTx taking Txq.Mu, at bring-up.
func (p *Pair) OpenTx() error {
	p.Txq.Mu.Lock()
	defer p.Txq.Mu.Unlock()
	return p.StartTx()
}

// RxWriter is what a refill after a poll that took taken descriptors
// from start arms them with: WriteRx, or while an injection waits for its
// descriptor, the hole in its place. RxMu is held.
func (p *Pair) RxWriter(start, taken int) func(i int, addr kernel.DMAAddr) {
	return p.inject.Writer(start, taken, p.RxDescs.Len(), p.WriteRx, p.armRx)
}

func (p *Pair) armRx(i int, addr kernel.DMAAddr) { p.WriteRx(i, p.inject.Arm(i, addr)) }

// endPoll ends a poll that filled pkts[:n]: the frames are judged against
// the DMA fault count (a device marks a descriptor done even when its
// data write was refused), a bound socket's TX ring is served and the
// doorbell rung. It returns how many frames the caller gets; RxMu is
// held.
func (p *Pair) endPoll(pkts []nic.RxPacket, n int) int {
	n = p.guard.Check(pkts[:n], p.RxStats)
	p.Txq.Mu.Lock()
	if p.X.Socket() != nil && !p.Txq.Closed {
		p.X.Send(len(pkts))
		p.Txq.ReclaimLocked()
	}
	p.Txq.Flush()
	p.Txq.Mu.Unlock()
	return n
}

// SendTxVerdict sends a copy of a frame a program answered xsk.Tx for,
// from the RX loop.
func (p *Pair) SendTxVerdict(frame []byte) {
	p.Txq.Mu.Lock()
	p.Txq.SendCopy(frame)
	p.Txq.Mu.Unlock()
}

// DebugCtl runs a debug command (ring.RxInject.Ctl): inject-unmapped-rx
// arms the next RX descriptor the queue refills with an IOVA the domain
// does not map. The device's write of the frame there faults, and the
// driver must drop the frame (ring.FaultGuard) and carry on.
func (p *Pair) DebugCtl(arg string, dma kernel.DMA) error {
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	busy := p.Closed.Load() || p.Stopped || p.X.ZeroCopy()
	return p.inject.Ctl(arg, busy, dma, kernel.PageSize, p.M.Driver, p.M.Name, p.M.Logf)
}

// Close releases everything after the device stopped: a bound socket
// gets its frames back, the injection's hole, the RX ring and the TX
// ring are freed.
func (p *Pair) Close() error {
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	p.Txq.Mu.Lock()
	defer p.Txq.Mu.Unlock()
	err := p.X.Unbind(false)
	p.Stopped, p.Txq.Closed = true, true
	return errors.Join(err, p.inject.Close(), p.closeRx(), p.Tx.Close())
}

// Free frees the rings of a queue that never started.
func (p *Pair) Free() {
	p.closeRx()
	p.Tx.Close()
}
