package xsk

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Desc is one RX or TX ring entry: a frame's offset in the UMEM and the
// frame's length.
type Desc struct {
	Addr uint64
	Len  uint32
}

// Umem is the application's frame area: Frames frames of FrameSize bytes,
// with the fill ring (free frames for the driver to receive into) and the
// completion ring (frames the driver has finished sending).
type Umem struct {
	Area      []byte
	FrameSize int
	Fill      *Ring[uint64]
	Comp      *Ring[uint64]
}

// UmemConfig sizes a Umem. Zero fields take the defaults.
type UmemConfig struct {
	Frames    int // default 4096
	FrameSize int // 2048 or 4096; default 2048
	FillSize  int // default Frames
	CompSize  int // default Frames
}

// NewUmem allocates a frame area and its rings.
func NewUmem(c UmemConfig) (*Umem, error) {
	if c.Frames == 0 {
		c.Frames = 4096
	}
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return nil, fmt.Errorf("xsk: frame size %d: want 2048 or 4096", c.FrameSize)
	}
	if c.Frames < 1 || c.Frames > 1<<18 {
		return nil, fmt.Errorf("xsk: %d frames: want 1..%d", c.Frames, 1<<18)
	}
	if c.FillSize == 0 {
		c.FillSize = ceilPow2(c.Frames)
	}
	if c.CompSize == 0 {
		c.CompSize = ceilPow2(c.Frames)
	}
	fill, err := NewRing[uint64](c.FillSize)
	if err != nil {
		return nil, fmt.Errorf("xsk: fill ring: %w", err)
	}
	comp, err := NewRing[uint64](c.CompSize)
	if err != nil {
		return nil, fmt.Errorf("xsk: completion ring: %w", err)
	}
	return &Umem{Area: make([]byte, c.Frames*c.FrameSize), FrameSize: c.FrameSize, Fill: fill, Comp: comp}, nil
}

func ceilPow2(n int) int {
	p := 2
	for p < n {
		p <<= 1
	}
	return p
}

// Frames is the number of frames in the area.
func (u *Umem) Frames() int { return len(u.Area) / u.FrameSize }

// Frame returns frame i's address (its offset in the area).
func (u *Umem) Frame(i int) uint64 { return uint64(i * u.FrameSize) }

// Check reports whether a frame of n bytes at addr lies inside one frame.
func (u *Umem) Check(addr uint64, n int) error {
	fs := uint64(u.FrameSize)
	if addr >= uint64(len(u.Area)) || n < 0 || addr%fs+uint64(n) > fs {
		return fmt.Errorf("xsk: frame %#x+%d outside the %d-byte frames of a %d-byte area: %w", addr, n, fs, len(u.Area), ErrBadFrame)
	}
	return nil
}

// Bytes returns the n bytes at addr; the caller has checked them.
func (u *Umem) Bytes(addr uint64, n int) []byte {
	return u.Area[addr : addr+uint64(n) : addr+uint64(n)]
}

// Mode is how a socket's frames move.
type Mode uint8

const (
	Copy     Mode = iota // the driver copies between its buffers and the frames
	ZeroCopy             // the NIC DMAs into and out of the frames
)

func (m Mode) String() string {
	if m == ZeroCopy {
		return "zero-copy"
	}
	return "copy"
}

// Errors.
var (
	ErrBadFrame = errors.New("bad frame")
	ErrBound    = errors.New("queue already has a socket")
	ErrNoQueue  = errors.New("no such queue")
	ErrClosed   = errors.New("socket closed")
)

// Stats counts a socket's traffic. Every frame the driver counted as
// received for the socket ends in exactly one of RxDelivered and the
// drop counters.
type Stats struct {
	RxDelivered  atomic.Uint64 // frames put on the RX ring
	RxFillEmpty  atomic.Uint64 // frames dropped: no free frame in the fill ring
	RxRingFull   atomic.Uint64 // frames dropped: the RX ring was full (frame back to the fill side)
	RxInvalid    atomic.Uint64 // fill ring entries refused as outside the area
	TxSent       atomic.Uint64 // frames the NIC finished sending
	TxInvalid    atomic.Uint64 // TX descriptors refused (frame returned through completion)
	TxAborted    atomic.Uint64 // frames returned unsent at unbind
	RxReturned   atomic.Uint64 // fill frames returned unused at unbind
	CompOverflow atomic.Uint64 // frames the completion ring had no room for (sized too small)
}

// Each calls fn for every counter in a stable order.
func (s *Stats) Each(fn func(name string, v uint64)) {
	fn("xsk_rx_delivered", s.RxDelivered.Load())
	fn("xsk_rx_fill_empty", s.RxFillEmpty.Load())
	fn("xsk_rx_ring_full", s.RxRingFull.Load())
	fn("xsk_rx_invalid", s.RxInvalid.Load())
	fn("xsk_tx_sent", s.TxSent.Load())
	fn("xsk_tx_invalid", s.TxInvalid.Load())
	fn("xsk_tx_aborted", s.TxAborted.Load())
	fn("xsk_rx_returned", s.RxReturned.Load())
	fn("xsk_comp_overflow", s.CompOverflow.Load())
}

// Socket is one application's hold on a queue pair: its Umem, its RX and
// TX rings and counters. The application produces to Umem.Fill and TX and
// consumes from RX and Umem.Comp; the driver does the opposite.
type Socket struct {
	Umem  *Umem
	RX    *Ring[Desc]
	TX    *Ring[Desc]
	Stats Stats

	poll atomic.Pointer[func(budget int) int]
	wait atomic.Pointer[func(timeout time.Duration) bool]
}

// NewSocket returns a socket over u with RX and TX rings of n entries.
func NewSocket(u *Umem, n int) (*Socket, error) {
	if u == nil {
		return nil, errors.New("xsk: socket without a umem")
	}
	rx, err := NewRing[Desc](n)
	if err != nil {
		return nil, fmt.Errorf("xsk: rx ring: %w", err)
	}
	tx, err := NewRing[Desc](n)
	if err != nil {
		return nil, fmt.Errorf("xsk: tx ring: %w", err)
	}
	return &Socket{Umem: u, RX: rx, TX: tx}, nil
}

// SetPoller is called by a driver when it binds the socket (nil when it
// unbinds): Poll runs the queue from the application's goroutine.
func (s *Socket) SetPoller(f func(budget int) int) {
	if f == nil {
		s.poll.Store(nil)
		return
	}
	s.poll.Store(&f)
}

// Poll drives the bound queue once: receive up to budget frames, send
// what the TX ring holds and complete finished sends. It returns the
// frames received, or 0 when the socket is not bound. Applications whose
// queue nobody else polls (no stack on it) call it in their loop.
func (s *Socket) Poll(budget int) int {
	f := s.poll.Load()
	if f == nil {
		return 0
	}
	return (*f)(budget)
}

// SetWaiter is called by a driver when it binds the socket (nil when it
// unbinds): Wait sleeps through it until the queue may have work.
func (s *Socket) SetWaiter(f func(timeout time.Duration) bool) {
	if f == nil {
		s.wait.Store(nil)
		return
	}
	s.wait.Store(&f)
}

// Wait gives up the CPU until the bound queue may have work (its interrupt,
// or polling where the platform has none) or timeout passes, the way an
// AF_XDP program sleeps in poll(2). An application that polls its own
// queue calls it when a Poll found nothing to do: a loop that spins
// instead takes the CPU from the sockets and the sender that do have
// work, and on a machine with one CPU the whole machine then moves one
// ring per scheduling slice. It returns at once, false, when the socket is
// not bound.
func (s *Socket) Wait(timeout time.Duration) bool {
	f := s.wait.Load()
	if f == nil {
		return false
	}
	return (*f)(timeout)
}

// Verdict is a packet program's decision.
type Verdict uint8

const (
	Pass     Verdict = iota // up to the stack
	Drop                    // discard
	Tx                      // send back out of the same queue (the program may have rewritten it)
	Redirect                // to the socket bound to the queue
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Drop:
		return "drop"
	case Tx:
		return "tx"
	case Redirect:
		return "redirect"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Program looks at a received frame (and may rewrite it in place) before
// the stack does. It runs on the queue's poll goroutine.
type Program func(frame []byte) Verdict

// RedirectAll sends every frame to the socket: the default of a bound
// queue with no program.
func RedirectAll([]byte) Verdict { return Redirect }

// Filter selects frames for steering: by EtherType, or by UDP destination
// port (IPv4). Exactly one is set.
type Filter struct {
	EtherType uint16
	UDPPort   uint16
}

func (f Filter) String() string {
	if f.EtherType != 0 {
		return fmt.Sprintf("ethertype %#04x", f.EtherType)
	}
	return fmt.Sprintf("udp port %d", f.UDPPort)
}

// Binder is what a driver offers for queue takeover.
type Binder interface {
	// NumQueues is the number of RX/TX queue pairs.
	NumQueues() int
	// Bind gives queue q to s in mode m. In zero-copy mode the Umem is
	// mapped into the device's DMA domain once, here.
	Bind(q int, s *Socket, m Mode) error
	// Unbind takes queue q back, safely while traffic flows: frames in
	// flight are returned to the socket's rings and the Umem unmapped.
	Unbind(q int) error
	// SetProgram installs p on queue q (nil: the default, Pass, or
	// RedirectAll on a bound queue).
	SetProgram(q int, p Program) error
	// Steer sends frames matching f to queue q, ahead of RSS; it returns
	// the filter slot, for Unsteer.
	Steer(f Filter, q int) (int, error)
	Unsteer(slot int) error
}
