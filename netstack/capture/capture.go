// Package capture keeps the frames a NIC receives and sends for readers
// of a pcap stream (/net/etherN/capture): a ring of fixed slots that the
// data path fills without waiting for anyone, and that each reader
// follows at its own pace. A reader that falls a whole ring behind loses
// the oldest frames, counted, and never slows the writer. With capture
// off the data path pays one atomic load (On) and nothing else.
package capture

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
)

// Sizes of the ring. Its slots take RingBytes together, but never fewer
// than MinSlots: a burst between two reads of a reader fits.
const (
	DefaultSnaplen = 2048    // a whole frame of a 1500-byte MTU; GSO packets are cut
	MinSnaplen     = 64      // an Ethernet, IP and TCP header with options
	MaxSnaplen     = 1 << 16 // a whole GSO packet
	RingBytes      = 1 << 20
	MinSlots       = 16
)

// ErrOff is what opening a capture that is off returns.
var ErrOff = errors.New("capture is off (ctl: capture on)")

// Capture is one interface's capture: off until On, readers only while
// on. It is safe for concurrent use; Add is called from every queue's
// receive loop and every transmitting goroutine.
type Capture struct {
	on atomic.Bool // the data path's only look when off

	mu      sync.Mutex // guards the rest, and the slots' contents
	snaplen int        // for the next ring
	slots   []slot     // the ring; nil when off and no reader drains it
	cut     int        // the ring's snaplen
	head    uint64     // frames written to this ring; the next goes to slot head%len
	gen     uint64     // counts rings: a reader of an older one has ended
	readers []*Reader
	frames  uint64 // frames written, over every ring
	dropped uint64 // frames readers lost to the ring's overwriting, summed
}

// slot is one frame: its time, its length on the wire and the bytes kept.
type slot struct {
	when int64 // Unix nanoseconds
	orig uint32
	data []byte // len = bytes kept, cap = snaplen
}

// New returns a capture that is off.
func New() *Capture { return &Capture{snaplen: DefaultSnaplen} }

// On reports whether frames are being captured: the data path's test
// before Add, one atomic load.
func (c *Capture) On() bool { return c.on.Load() }

// Add records a frame b, handed to the stack or to the driver, if
// capture is on. It never blocks on a reader and allocates nothing:
// the frame's bytes, up to the snaplen, are copied into the next slot.
func (c *Capture) Add(b *buffer.Buffer) {
	size := b.Size()
	when := time.Now().UnixNano()
	// The headers, to know a reader's own stream before a slot (which may
	// hold a frame a lagging reader still wants) is overwritten.
	var hdr [headers]byte
	k, _ := b.ReadAt(hdr[:], 0)
	c.mu.Lock()
	if !c.on.Load() {
		c.mu.Unlock() // turned off since the caller looked
		return
	}
	if c.own(hdr[:k]) {
		c.mu.Unlock()
		return
	}
	s := &c.slots[c.head%uint64(len(c.slots))]
	s.data = s.data[:min(size, int64(c.cut))]
	b.ReadAt(s.data, 0)
	s.when, s.orig = when, uint32(min(size, 1<<32-1))
	c.head++
	c.frames++
	n := uint64(len(c.slots))
	for _, r := range c.readers {
		// A reader the ring has lapped loses its oldest frame now, not
		// when it next reads: one blocked on a full connection may not
		// read for a long time, and its losses must show meanwhile.
		if r.gen == c.gen && c.head-r.next > n {
			r.next = c.head - n
			r.dropped++
			c.dropped++
		}
		select {
		case r.wake <- struct{}{}:
		default: // already told
		}
	}
	c.mu.Unlock()
}

// Start turns capture on with a new ring of the current snaplen. It is a
// no-op when already on. Readers still draining an earlier ring end.
func (c *Capture) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on.Load() {
		return
	}
	n := max(MinSlots, RingBytes/c.snaplen)
	if len(c.slots) != n || c.cut != c.snaplen {
		c.slots = make([]slot, n)
		backing := make([]byte, n*c.snaplen)
		for i := range c.slots {
			c.slots[i].data = backing[i*c.snaplen : i*c.snaplen : (i+1)*c.snaplen]
		}
	}
	c.cut = c.snaplen
	c.head = 0
	c.gen++
	c.wakeAll()
	c.on.Store(true)
}

// Stop turns capture off. Open readers read what the ring holds for them
// and then reach the end of their stream; the ring is freed when the
// last of them closes.
func (c *Capture) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on.Store(false)
	c.wakeAll()
	if len(c.readers) == 0 {
		c.slots = nil
	}
}

func (c *Capture) wakeAll() {
	for _, r := range c.readers {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// own reports whether frame belongs to the connection of a reader's
// stream. c.mu is held.
func (c *Capture) own(frame []byte) bool {
	if len(c.readers) == 0 {
		return false
	}
	src, dst, ok := tcpConn(frame)
	if !ok {
		return false
	}
	for _, r := range c.readers {
		if (src == r.local && dst == r.remote) || (src == r.remote && dst == r.local) {
			return true
		}
	}
	return false
}

// SetSnaplen sets how many bytes of each frame the next ring keeps. It is
// refused while capture is on: the readers' streams declared the old one.
func (c *Capture) SetSnaplen(n int) error {
	if n < MinSnaplen || n > MaxSnaplen {
		return fmt.Errorf("capture snaplen %d: want %d..%d", n, MinSnaplen, MaxSnaplen)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on.Load() {
		return fmt.Errorf("capture snaplen %d: capture is on (capture off first)", n)
	}
	c.snaplen = n
	return nil
}

// Snaplen is the bytes of each frame the next ring keeps.
func (c *Capture) Snaplen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snaplen
}

// Stats are the capture's counters: frames captured, frames readers lost
// (one a reader missed counts once for that reader), readers open.
func (c *Capture) Stats() (frames, dropped uint64, readers int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames, c.dropped, len(c.readers)
}

// Open returns a reader of the pcap stream: the file header, then the
// frames captured from now on, until capture goes off (io.EOF once the
// ring is drained) or the reader is closed.
//
// local and remote are the TCP connection the stream goes out on (zero
// when it does not): its frames are left out of every reader's stream,
// since each would be captured and sent again, without end.
func (c *Capture) Open(local, remote netip.AddrPort) (*Reader, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on.Load() {
		return nil, ErrOff
	}
	r := &Reader{
		c: c, gen: c.gen, next: c.head, local: local, remote: remote,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		buf: make([]byte, 0, max(64<<10, recordHeader+c.cut)),
	}
	r.pend = fileHeader(r.buf[:0], c.cut)
	c.readers = append(c.readers, r)
	return r, nil
}

// Reader is one reader of a capture's pcap stream. Read and Close may be
// called from different goroutines.
type Reader struct {
	c             *Capture
	local, remote netip.AddrPort // the connection the stream goes out on
	wake          chan struct{}  // a frame came, or the capture changed
	done          chan struct{}  // closed by Close
	once          sync.Once

	mu      sync.Mutex // serialises Read
	gen     uint64     // the ring it follows; c.mu
	next    uint64     // the next frame it reads; c.mu
	dropped uint64     // frames it lost; c.mu
	buf     []byte     // records encoded, not yet read
	pend    []byte
}

var _ io.ReadCloser = (*Reader)(nil)

// ErrClosed is what Read returns after Close.
var ErrClosed = errors.New("capture: reader closed")

// Read fills p with the stream's next bytes. It waits until there is a
// frame; at least one byte is returned unless the stream ended.
func (r *Reader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.pend) == 0 {
		more, err := r.fill()
		if err != nil {
			return 0, err
		}
		if more {
			continue
		}
		select {
		case <-r.wake:
		case <-r.done:
			return 0, ErrClosed
		}
	}
	n := copy(p, r.pend)
	r.pend = r.pend[n:]
	return n, nil
}

// fill encodes the frames waiting for r into r.pend, as many as the
// buffer holds; false with no error means there are none yet.
func (r *Reader) fill() (bool, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-r.done:
		return false, ErrClosed
	default:
	}
	if r.gen != c.gen {
		return false, io.EOF // capture went off and on again: a new stream
	}
	if r.next == c.head {
		if !c.on.Load() {
			return false, io.EOF
		}
		return false, nil
	}
	n := uint64(len(c.slots)) // Add keeps r.next within the ring
	b := r.buf[:0]
	for r.next < c.head {
		s := &c.slots[r.next%n]
		if len(b) > 0 && len(b)+recordHeader+len(s.data) > cap(b) {
			break
		}
		b = record(b, s)
		r.next++
	}
	r.pend = b
	return true, nil
}

// Dropped is how many frames this reader lost to the ring.
func (r *Reader) Dropped() uint64 {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.dropped
}

// Close ends the reader; a Read waiting in another goroutine returns.
func (r *Reader) Close() error {
	r.once.Do(func() {
		close(r.done)
		c := r.c
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.readers {
			if x == r {
				c.readers = append(c.readers[:i], c.readers[i+1:]...)
				break
			}
		}
		if len(c.readers) == 0 && !c.on.Load() {
			c.slots = nil
		}
	})
	return nil
}
