package igc

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// The receive buffer layout. Every buffer is half a page (2 KiB). A ring
// that builds packets around their buffers has the device write each
// frame rxHeadroom bytes into its half, and keeps the frame short enough
// that the budget Linux reserves behind it (the skb_shared_info tail and
// the I225's optional 16-byte receive timestamp) also fits: so the
// threshold is the seed's, 1648 bytes of frame, an MTU of 1626.
const (
	rxBufLen      = ring.HalfPage
	rxHeadroom    = 64  // NET_SKB_PAD: room in front for headers pushed later
	rxTailroom    = 320 // SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
	rxTSHeader    = 16  // receive timestamp the device may put before the frame
	MaxFrameBuild = rxBufLen - rxHeadroom - rxTailroom - rxTSHeader
)

// maxFrame is the longest frame an MTU admits, FCS and one VLAN tag in.
func maxFrame(mtu int) int { return mtu + adv.FrameExtra }

// Layout is how a ring turns a received buffer into a packet.
type Layout uint8

const (
	// Construct copies up to 256 bytes of headers into a new small view
	// and attaches the rest of the buffer without copying.
	Construct Layout = iota
	// Build hands the buffer itself up: a view over it with the headroom
	// trimmed, no copy at all.
	Build
)

func (l Layout) String() string {
	if l == Build {
		return "build"
	}
	return "construct"
}

// chooseLayout is the seed's rule: build only with no packet program and
// only when the maximum frame fits a 2 KiB buffer minus headroom and
// overhead; build off (the policy knob) means construct always.
func chooseLayout(allowBuild, program bool, mtu int) Layout {
	if allowBuild && !program && maxFrame(mtu) <= MaxFrameBuild {
		return Build
	}
	return Construct
}

// headroom is where in its half the device writes a frame.
func (l Layout) headroom() int {
	if l == Build {
		return rxHeadroom
	}
	return 0
}

type rxPage struct {
	ring.PageSlot
	chunk *chunkMap // Page is a 2 KiB chunk of the build layout (rxchunk.go), Off 0
}

// rxRing is an RX ring of half-page buffers, flipped to the other half
// when a packet went up with one and nobody else holds the other, as
// Linux's igc does.
type rxRing struct {
	ring.Cursor
	Descs  *ring.Descs
	Stats  ring.RxStats
	Pages  ring.PageStats
	Chunks chunkStats

	dma     kernel.DMA
	slots   []rxPage
	chunks  chunkTable   // build layout: the mappings kept, by chunk address
	returns chunkReturns // build layout: chunks taken back from released packets
	tally   rxTally      // this poll's counts, not yet published
	layout  Layout
}

func newRxRing(dma kernel.DMA, n, descSize int) (*rxRing, error) {
	d, err := ring.NewDescs(dma, n, descSize)
	if err != nil {
		return nil, err
	}
	return &rxRing{Cursor: ring.NewCursor(n), Descs: d, dma: dma, slots: make([]rxPage, n), chunks: newChunkTable(maxMapped(n))}, nil
}

// room is the bytes the device may write into one buffer.
func (r *rxRing) room() int { return rxBufLen - r.layout.headroom() }

// Mapped counts the pages mapped for the device.
func (r *rxRing) Mapped() int {
	n := 0
	for i := range r.slots {
		if r.slots[i].Mapped {
			n++
		}
	}
	return n
}

// rxTally counts a poll's frames in plain fields, and publish adds them to
// the shared counters once at the poll's end: as Linux's igc updates its
// ring statistics once per poll, not an atomic add per frame per counter.
type rxTally struct {
	frames, bytes, copybreak, handoffs, returns, built, constructed uint64
}

// publish adds the tally to the ring's counters and starts a new one;
// built and constructed go to the queue's, returned.
func (r *rxRing) publish() (built, constructed uint64) {
	t := r.tally
	r.tally = rxTally{}
	add := func(c *atomic.Uint64, n uint64) {
		if n != 0 {
			c.Add(n)
		}
	}
	add(&r.Stats.Frames, t.frames)
	add(&r.Stats.Bytes, t.bytes)
	add(&r.Stats.Copybreak, t.copybreak)
	add(&r.Stats.Handoffs, t.handoffs)
	add(&r.Chunks.Returns, t.returns)
	return t.built, t.constructed
}

// refill arms free descriptors through write(i, addr) (Cursor.Refill)
// and reports whether the tail moved.
func (r *rxRing) refill(write func(i int, addr kernel.DMAAddr)) bool {
	return r.Refill(r.arm, write)
}

func (r *rxRing) arm(i int) (kernel.DMAAddr, error) {
	s := &r.slots[i]
	hr := kernel.DMAAddr(r.layout.headroom())
	switch {
	case s.Page == nil && r.layout == Build:
		return r.armChunk(s, i)
	case s.chunk == nil:
		a, err := s.Arm(r.dma, &r.Stats, &r.Pages)
		if err != nil {
			return 0, err
		}
		return a + hr, nil
	}
	// A chunk kept from before: its mapping is the chunk table's.
	if err := r.dma.SyncForDevice(s.Half(), rxBufLen, kernel.FromDevice); err != nil {
		r.giveUp(s)
		r.Stats.Drop(ring.DropDMA)
		return 0, fmt.Errorf("igc: sync rx chunk %d for device: %w", i, err)
	}
	return s.Half() + hr, nil
}

// current checks the slot at clean for a frame of n bytes and makes the
// bytes visible to the CPU. On error the frame is counted as dropped.
func (r *rxRing) current(n int) (*rxPage, []byte, error) {
	s := &r.slots[r.Clean()]
	if s.Page == nil || !s.Mapped {
		r.Stats.Drop(ring.DropDMA)
		return nil, nil, fmt.Errorf("igc: rx descriptor %d completed with no armed buffer", r.Clean())
	}
	if n <= 0 || n > r.room() {
		r.drop(ring.DropLength)
		return nil, nil, fmt.Errorf("igc: rx length %d outside 1..%d", n, r.room())
	}
	start := s.Off + r.layout.headroom()
	if err := r.dma.SyncForCPU(s.Addr+kernel.DMAAddr(start), n, kernel.FromDevice); err != nil {
		r.Stats.Drop(ring.DropDMA)
		r.giveUp(s)
		return nil, nil, fmt.Errorf("igc: sync rx buffer %d for cpu: %w", r.Clean(), err)
	}
	return s, s.Page.AsSlice()[start : start+n], nil
}

// build returns the frame of n bytes at clean as a view over its buffer,
// headroom trimmed: no copy. A chunk of its own goes up whole, with the
// hook that offers it back (nic.RxPacket.Recycle); a half page (a slot
// armed before the layout was build) goes up shared, with none.
func (r *rxRing) build(n int) (buffer.Buffer, func(*buffer.View), error) {
	s, _, err := r.current(n)
	if err != nil {
		return buffer.Buffer{}, nil, err
	}
	r.count(n)
	r.tally.handoffs++
	r.tally.built++
	if s.chunk != nil {
		v, recycle := r.handChunk(s, n)
		return buffer.MakeWithView(v), recycle, nil
	}
	v := s.Page.Clone()
	v.TrimFront(s.Off + r.layout.headroom())
	v.CapLength(n)
	r.flip(s)
	return buffer.MakeWithView(v), nil, nil
}

// construct returns the frame of n bytes at clean as a new head holding
// its headers and, for a longer frame, the rest of the buffer attached
// without copying (ring.Construct). A frame that fits the head leaves its
// buffer to be re-armed as it is.
func (r *rxRing) construct(n int) (buffer.Buffer, error) {
	s, b, err := r.current(n)
	if err != nil {
		return buffer.Buffer{}, err
	}
	buf, shared := ring.Construct(s.Page, s.Off+r.layout.headroom(), b)
	r.count(n)
	r.tally.constructed++
	if !shared {
		r.tally.copybreak++
		return buf, nil
	}
	r.tally.handoffs++
	r.flip(s)
	return buf, nil
}

// peek returns the frame's bytes for a packet program; they stay valid
// until the frame is built, kept or dropped.
func (r *rxRing) peek(n int) ([]byte, error) {
	_, b, err := r.current(n)
	return b, err
}

// keep counts a frame used in place (a program dropped or sent it): its
// half stays armed.
func (r *rxRing) keep(n int) {
	r.count(n)
	r.Stats.Recycled.Add(1)
}

func (r *rxRing) count(n int) {
	r.tally.frames++
	r.tally.bytes += uint64(n)
}

// flip moves a slot to its page's other half after one half went up
// (ring.PageSlot.Flip).
func (r *rxRing) flip(s *rxPage) { s.Flip(r.dma, &r.Stats, &r.Pages) }

// giveUp unmaps a slot's page, or drops its chunk, and drops the ring's
// reference; views the stack holds keep the memory alive.
func (r *rxRing) giveUp(s *rxPage) error {
	if s.chunk != nil {
		return r.dropChunk(s)
	}
	return s.GiveUp(r.dma, &r.Stats)
}

// drop discards the frame at clean; its half stays armed.
func (r *rxRing) drop(reason ring.DropReason) {
	r.Stats.Drop(reason)
	r.Stats.Recycled.Add(1)
}

// reset forgets the cursors after the device's queue was stopped and sets
// the layout for the next refill; buffers of the layout's kind stay with
// their slots, the others are given up, and leaving the build layout
// drops the chunk mappings kept for the stack's returns.
func (r *rxRing) reset(l Layout) error {
	r.Rewind()
	r.layout = l
	r.Descs.Clear()
	var errs []error
	for i := range r.slots {
		if s := &r.slots[i]; s.Page != nil && (s.chunk != nil) != (l == Build) {
			errs = append(errs, r.giveUp(s))
		}
	}
	if l != Build {
		r.dropReturns(false)
		errs = append(errs, r.evictChunks())
	}
	return errors.Join(errs...)
}

// close releases every page and frees the descriptors. The device must be
// stopped.
func (r *rxRing) close() error {
	var errs []error
	for i := range r.slots {
		if err := r.giveUp(&r.slots[i]); err != nil {
			errs = append(errs, err)
		}
	}
	r.dropReturns(true)
	errs = append(errs, r.evictChunks(), r.Descs.Free())
	return errors.Join(errs...)
}
