package xsk

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
)

// Hw is what a driver does for a Queue: the parts that depend on its
// registers and descriptor formats. The Queue calls the RX methods with
// the driver's RX lock held and the TX methods with its TX lock held, as
// the driver calls the Queue.
type Hw interface {
	// StopRx clears the RX queue's enable bit and waits until the device
	// agrees.
	StopRx() error
	// ReleaseRx gives up the driver's own RX buffers before the Queue
	// arms the ring with the socket's frames.
	ReleaseRx() error
	// StartRx programs and enables the RX queue, arms it (with the
	// Queue's frames through Queue.Refill while the Queue holds the ring
	// in zero-copy mode, else with the driver's buffers) and writes the
	// tail.
	StartRx() error
	// StopTx clears the TX queue's enable bit and waits; StartTx resets
	// the TX ring, programs the queue and enables it.
	StopTx() error
	StartTx() error
	// WriteRx arms RX descriptor i with the buffer at device address addr.
	WriteRx(i int, addr kernel.DMAAddr)
	// WriteTx queues one frame of n bytes at device address addr as a
	// single data descriptor and returns the descriptor's index; false
	// when the ring is full. The driver rings the doorbell later.
	WriteTx(addr kernel.DMAAddr, n int) (int, bool)
	// SendCopy queues a copy of frame; false when it was not taken.
	SendCopy(frame []byte) bool
	// TxFree is how many single-descriptor frames the TX ring has room for.
	TxFree() int
	// ReclaimTx reads the TX ring's completions and calls Queue.Complete
	// for each finished descriptor.
	ReclaimTx()
	// WaitFor calls cond until it holds or timeout passes on the device's
	// clock.
	WaitFor(timeout time.Duration, cond func() bool) bool
	// Receive and Wait are the queue's nic.Queue methods; a bound socket
	// drives the queue through them.
	Receive(pkts []nic.RxPacket) (n, taken int)
	Wait(timeout time.Duration) bool
}

// QueueConfig sizes a Queue.
type QueueConfig struct {
	RxDescs int // descriptors of the RX ring
	TxDescs int // descriptors of the TX ring
	MaxTx   int // longest frame the TX side copies (the driver's bounce buffer)
}

// Queue is the socket side of one driver queue pair: the program, the
// bound socket, the zero-copy RX ring armed from the socket's fill ring,
// the TX frames in flight and their completions, and giving every frame
// back when the socket lets go. The driver keeps its own receive loop and
// register programming and calls in here for everything else.
//
// The driver's RX lock guards the RX side (Refill, Advance, RunZC, Run),
// its TX lock the TX side (Send, Complete); Bind and Unbind run with both.
type Queue struct {
	hw  Hw
	dma kernel.DMA
	cfg QueueConfig

	sock atomic.Pointer[Socket]
	prog atomic.Pointer[Program]
	mode Mode
	zc   *zcRing // non-nil while the socket holds the RX ring in zero-copy mode

	txSock   *Socket
	txFrame  []uint64 // zero-copy TX: frame address+1 held by descriptor i
	inFlight int      // zero-copy frames on the TX ring

	Verdicts [4]atomic.Uint64 // program verdicts, by Verdict
	NoSocket atomic.Uint64    // redirects with no socket bound
	NoStack  atomic.Uint64    // frames passed while only the socket polled the queue

	// The batch a socket's poll receives into; a stack may poll the
	// queue from another goroutine with its own.
	sockMu    sync.Mutex
	sockBatch []nic.RxPacket
}

// NewQueue returns the socket side of a queue pair the driver runs
// through hw, its DMA through dma.
func NewQueue(hw Hw, dma kernel.DMA, c QueueConfig) (*Queue, error) {
	if c.RxDescs < 2 || c.TxDescs < 2 || c.MaxTx < ethHdrLen {
		return nil, fmt.Errorf("xsk: queue of %d rx, %d tx descriptors, %d-byte tx frames", c.RxDescs, c.TxDescs, c.MaxTx)
	}
	return &Queue{hw: hw, dma: dma, cfg: c, txFrame: make([]uint64, c.TxDescs)}, nil
}

const ethHdrLen = 14

// Socket is the bound socket, or nil.
func (x *Queue) Socket() *Socket { return x.sock.Load() }

// Mode is the bound socket's mode.
func (x *Queue) Mode() Mode { return x.mode }

// ZeroCopy reports whether the socket's frames are armed on the RX ring.
func (x *Queue) ZeroCopy() bool { return x.zc != nil }

// SetProgram installs p (nil: the default).
func (x *Queue) SetProgram(p Program) {
	if p == nil {
		x.prog.Store(nil)
		return
	}
	x.prog.Store(&p)
}

// Program is the program frames run through: the installed one, else
// RedirectAll on a bound queue, else none (everything to the stack).
func (x *Queue) Program() Program {
	if p := x.prog.Load(); p != nil {
		return *p
	}
	if x.sock.Load() != nil {
		return RedirectAll
	}
	return nil
}

// EachStat calls fn for the queue's verdict counters.
func (x *Queue) EachStat(fn func(name string, v uint64)) {
	for v := Pass; v <= Redirect; v++ {
		fn("xdp_"+v.String(), x.Verdicts[v].Load())
	}
	fn("xdp_redirect_no_socket", x.NoSocket.Load())
	fn("xdp_pass_no_stack", x.NoStack.Load())
}

// Bind gives the queue to s in mode m; maxFrame is the longest frame the
// device may receive. In zero-copy mode the frame area is mapped once, the
// driver's RX buffers are given up and the RX ring is re-armed from the
// socket's fill ring. The driver holds its RX and TX locks.
func (x *Queue) Bind(s *Socket, m Mode, maxFrame int) error {
	if s == nil || s.Umem == nil || s.RX == nil || s.TX == nil {
		return errors.New("incomplete socket")
	}
	if m == ZeroCopy && s.Umem.FrameSize < maxFrame {
		return fmt.Errorf("%d-byte frames hold no %d-byte frame", s.Umem.FrameSize, maxFrame)
	}
	if x.sock.Load() != nil {
		return ErrBound
	}
	if m == ZeroCopy {
		base, err := x.dma.Map(s.Umem.Area, kernel.Bidirectional)
		if err != nil {
			return fmt.Errorf("map %d-byte frame area: %w", len(s.Umem.Area), err)
		}
		if err := x.hw.StopRx(); err != nil {
			return errors.Join(err, x.dma.Unmap(base, len(s.Umem.Area), kernel.Bidirectional))
		}
		relErr := x.hw.ReleaseRx()
		x.zc = &zcRing{dma: x.dma, umem: s.Umem, sock: s, base: base, frames: make([]uint64, x.cfg.RxDescs)}
		if err := x.hw.StartRx(); err != nil {
			x.zc = nil
			return errors.Join(err, relErr, x.dma.Unmap(base, len(s.Umem.Area), kernel.Bidirectional), x.hw.StartRx())
		}
		if relErr != nil {
			return fmt.Errorf("release rx buffers: %w", relErr)
		}
	}
	x.mode = m
	x.txSock = s
	x.sock.Store(s)
	s.SetPoller(x.pollSocket)
	s.SetWaiter(x.hw.Wait)
	return nil
}

// pollSocket runs the queue for an application with no stack on it:
// frames the program passes have nowhere to go and are released.
func (x *Queue) pollSocket(budget int) int {
	x.sockMu.Lock()
	defer x.sockMu.Unlock()
	if cap(x.sockBatch) < budget {
		x.sockBatch = make([]nic.RxPacket, budget)
	}
	pkts := x.sockBatch[:budget]
	n, taken := x.hw.Receive(pkts)
	for i := range pkts[:n] {
		x.NoStack.Add(1)
		pkts[i].Data.Release()
		pkts[i] = nic.RxPacket{}
	}
	return taken
}

// Unbind takes the queue back from its socket, safely while traffic
// flows: sends in flight get time to finish and are then returned through
// the completion ring, armed frames are returned through it too, the area
// is unmapped, and with restart the driver's rings start again. The driver
// holds its RX and TX locks. Unbinding an unbound queue does nothing.
func (x *Queue) Unbind(restart bool) error {
	s := x.sock.Load()
	if s == nil {
		return nil
	}
	s.SetPoller(nil)
	s.SetWaiter(nil)
	// Unbound from here on: a ring restarted below re-decides its buffers
	// without the socket's program.
	x.sock.Store(nil)
	x.mode = Copy
	var errs []error
	if x.inFlight > 0 {
		x.hw.WaitFor(10*time.Millisecond, func() bool {
			x.hw.ReclaimTx()
			return x.inFlight == 0
		})
	}
	if x.inFlight > 0 {
		// The device kept them: stop it before the frames go back.
		if err := x.hw.StopTx(); err != nil {
			errs = append(errs, err)
		}
		for i := range x.txFrame {
			x.complete(i, true)
		}
		if restart {
			errs = append(errs, x.hw.StartTx())
		}
	}
	if z := x.zc; z != nil {
		if err := x.hw.StopRx(); err != nil {
			errs = append(errs, err)
		}
		for i, a := range z.frames {
			if a != 0 {
				returnFrame(s, a-1)
				s.Stats.RxReturned.Add(1)
				z.frames[i] = 0
			}
		}
		if err := x.dma.Unmap(z.base, len(s.Umem.Area), kernel.Bidirectional); err != nil {
			errs = append(errs, fmt.Errorf("unmap frame area: %w", err))
		}
		x.zc = nil
		if restart {
			errs = append(errs, x.hw.StartRx())
		}
	}
	x.txSock = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("detach socket: %w", err)
	}
	return nil
}

// returnFrame gives a frame back through the completion ring, which holds
// every frame of the area unless it was sized too small.
func returnFrame(s *Socket, a uint64) {
	if !s.Umem.Comp.Produce(a) {
		s.Stats.CompOverflow.Add(1)
	}
}

// RX side, zero-copy mode.

// RxFrameSize is the buffer size the RX ring is armed with in zero-copy mode.
func (x *Queue) RxFrameSize() int { return x.zc.umem.FrameSize }

// Armed is the number of descriptors the device owns; Clean is the next
// one to complete; Tail is where the driver's tail register points.
func (x *Queue) Armed() int { return x.zc.armed }
func (x *Queue) Clean() int { return x.zc.clean }
func (x *Queue) Tail() int  { return x.zc.next }

// Reset forgets the ring's positions (the device's head is back at 0);
// the frames stay with their descriptors.
func (x *Queue) Reset() { x.zc.clean, x.zc.next, x.zc.armed = 0, 0, 0 }

// Advance moves past the descriptor at Clean.
func (x *Queue) Advance() {
	z := x.zc
	z.clean = (z.clean + 1) % len(z.frames)
	z.armed--
}

// Refill arms free descriptors with their own frame or a new one from the
// fill ring through Hw.WriteRx; it reports whether the tail moved.
func (x *Queue) Refill() bool { return x.zc.refill(x.hw.WriteRx) }

// RunZC takes the n-byte frame the device wrote into the socket's frame at
// Clean through the program and counts the verdict. A redirected frame
// goes to the socket's RX ring; one its full ring had no room for comes
// back as Drop. For Pass and Tx the driver copies b to the stack or sends
// a copy back. Every frame but a delivered redirect stays armed at its
// descriptor.
func (x *Queue) RunZC(prog Program, n int) (b []byte, v Verdict, err error) {
	z := x.zc
	if b, err = z.peek(n); err != nil {
		return nil, Drop, err
	}
	v = prog(b)
	x.Verdicts[v&3].Add(1)
	if v == Redirect {
		s := z.sock
		if s.RX.Produce(Desc{Addr: z.frame(), Len: uint32(n)}) {
			z.take()
			s.Stats.RxDelivered.Add(1)
		} else {
			s.Stats.RxRingFull.Add(1)
			v = Drop
		}
	}
	return b, v, nil
}

// Run takes a frame in a driver buffer through prog and counts the
// verdict; a redirect is copied into a frame of the socket (copy mode).
// The driver acts on Pass and Tx.
func (x *Queue) Run(prog Program, b []byte) Verdict {
	v := prog(b)
	x.Verdicts[v&3].Add(1)
	if v == Redirect {
		x.copyIn(b)
	}
	return v
}

// copyIn copies a frame into a free frame of the socket.
func (x *Queue) copyIn(b []byte) {
	s := x.sock.Load()
	if s == nil {
		x.NoSocket.Add(1)
		return
	}
	if s.RX.Free() == 0 {
		s.Stats.RxRingFull.Add(1)
		return
	}
	for {
		a, ok := s.Umem.Fill.Consume()
		if !ok {
			s.Stats.RxFillEmpty.Add(1)
			return
		}
		if err := s.Umem.Check(a, len(b)); err != nil {
			s.Stats.RxInvalid.Add(1)
			continue
		}
		copy(s.Umem.Bytes(a, len(b)), b)
		s.RX.Produce(Desc{Addr: a, Len: uint32(len(b))})
		s.Stats.RxDelivered.Add(1)
		return
	}
}

// TX side.

// InFlight is the number of zero-copy frames on the TX ring.
func (x *Queue) InFlight() int { return x.inFlight }

// Send moves up to budget frames from the bound socket's TX ring to the
// device: by reference in zero-copy mode, copied in copy mode. A frame is
// taken only when the completion ring has room for it. It reports whether
// anything was queued, so the driver knows to ring the doorbell.
func (x *Queue) Send(budget int) bool {
	s := x.txSock
	if s == nil {
		return false
	}
	queued := false
	comp := s.Umem.Comp
	for k := 0; k < budget && x.hw.TxFree() > 0 && comp.Free() > x.inFlight; k++ {
		desc, ok := s.TX.Consume()
		if !ok {
			break
		}
		n := int(desc.Len)
		if n < ethHdrLen || n > x.cfg.MaxTx || s.Umem.Check(desc.Addr, n) != nil {
			s.Stats.TxInvalid.Add(1)
			returnFrame(s, desc.Addr)
			continue
		}
		if x.zc == nil || x.mode != ZeroCopy {
			if x.hw.SendCopy(s.Umem.Bytes(desc.Addr, n)) {
				s.Stats.TxSent.Add(1)
				queued = true
			} else {
				s.Stats.TxInvalid.Add(1)
			}
			returnFrame(s, desc.Addr)
			continue
		}
		addr := x.zc.base + kernel.DMAAddr(desc.Addr)
		if err := x.dma.SyncForDevice(addr, n, kernel.Bidirectional); err != nil {
			s.Stats.TxInvalid.Add(1)
			returnFrame(s, desc.Addr)
			continue
		}
		i, ok := x.hw.WriteTx(addr, n)
		if !ok {
			// TxFree said there was room: give the frame back rather than lose it.
			s.Stats.TxInvalid.Add(1)
			returnFrame(s, desc.Addr)
			break
		}
		x.txFrame[i] = desc.Addr + 1
		x.inFlight++
		queued = true
	}
	return queued
}

// Complete finishes the zero-copy send TX descriptor i held, if any: the
// frame goes back through the completion ring.
func (x *Queue) Complete(i int) { x.complete(i, false) }

func (x *Queue) complete(i int, aborted bool) {
	a := x.txFrame[i]
	if a == 0 {
		return
	}
	x.txFrame[i] = 0
	x.inFlight--
	if s := x.txSock; s != nil {
		returnFrame(s, a-1)
		if aborted {
			s.Stats.TxAborted.Add(1)
		} else {
			s.Stats.TxSent.Add(1)
		}
	}
}
