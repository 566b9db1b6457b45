package ring

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// HalfPage is the buffer size of a PageRxRing: two buffers per page.
const HalfPage = kernel.PageSize / 2

// PageStats counts what half-page reuse did.
type PageStats struct {
	Allocs   atomic.Uint64 // pages allocated (and mapped)
	Flips    atomic.Uint64 // handoffs after which the page's other half was re-armed
	Released atomic.Uint64 // pages given up because the stack still held their other half
	Outdated atomic.Uint64 // refcount unreadable: page not reused
	Holdoffs atomic.Uint64 // copy periods a give-up started (holdoff)
}

// Each calls fn for every counter in a stable order.
func (s *PageStats) Each(fn func(name string, v uint64)) {
	fn("rx_page_allocs", s.Allocs.Load())
	fn("rx_page_flips", s.Flips.Load())
	fn("rx_page_released", s.Released.Load())
	fn("rx_page_refs_unknown", s.Outdated.Load())
	fn("rx_page_holdoffs", s.Holdoffs.Load())
}

// PageRxRing is a receive ring of half-page buffers, reused the way
// Linux's igb does: a page is mapped once; a frame handed up takes one
// half with it (a view sharing the page, no copy) and the slot flips to
// the other half, as long as nobody else still holds that half. A steady
// stream whose frames the stack consumes in time therefore allocates and
// maps nothing. A frame shorter than copybreak is copied and its half
// re-armed.
//
// A longer frame goes up constructed (Construct): its headers copied
// into a head of its own and the rest of the half attached. With build
// set it goes up built instead, the half itself as the packet's only
// view, Linux's build_skb: kept so both can be measured in one build, as
// in gVisor it costs a copy of the whole page at the stack's first
// header pull-up (gVisor's views are copy-on-write).
type PageRxRing struct {
	Cursor
	Descs *Descs
	Stats RxStats
	Pages PageStats

	dma       kernel.DMA
	slots     []PageSlot
	copybreak atomic.Int64
	build     atomic.Bool
	hold      holdoff
}

// holdoff is the ring's answer to a stack that keeps its frames longer
// than a turn of the ring (a reader behind its socket): a slot that comes
// round with its other half still held must give its page up, and a new
// page allocated and mapped costs more than copying the frame (tools/bench
// pagerx's late reader: half the rate of copying). So a give-up starts a
// period of whole copies, which re-arm their halves and leave held pages
// alone; a give-up that soon follows another doubles the period, and a
// ring's turn of flips starts over. A reader that keeps up never sees a
// copy; one that stays behind costs one give-up per maxHoldoff turns.
// Only Receive, under the queue's lock, touches it.
type holdoff struct {
	left   int // frames still to copy whole
	period int // frames the next give-up copies, in turns of the ring; 0: 1
	flips  int // flips since the last give-up
}

const maxHoldoff = 64 // the longest period, in turns of the ring

// NewPageRxRing allocates n descriptors of descSize bytes. Pages are
// allocated and mapped by the first Refill.
func NewPageRxRing(dma kernel.DMA, n, descSize int) (*PageRxRing, error) {
	d, err := NewDescs(dma, n, descSize)
	if err != nil {
		return nil, err
	}
	return &PageRxRing{Cursor: NewCursor(n), Descs: d, dma: dma, slots: make([]PageSlot, n)}, nil
}

// BufSize is the size of every RX buffer.
func (r *PageRxRing) BufSize() int { return HalfPage }

// SetCopybreak sets the length below which frames are copied; 0 never copies.
func (r *PageRxRing) SetCopybreak(n int) { r.copybreak.Store(int64(n)) }

// Copybreak returns the current copybreak.
func (r *PageRxRing) Copybreak() int { return int(r.copybreak.Load()) }

// SetBuild hands frames up built (true) or constructed (false, the
// default).
func (r *PageRxRing) SetBuild(on bool) { r.build.Store(on) }

// Build reports whether frames go up built.
func (r *PageRxRing) Build() bool { return r.build.Load() }

// Mapped counts the pages mapped for the device.
func (r *PageRxRing) Mapped() int {
	n := 0
	for i := range r.slots {
		if r.slots[i].Mapped {
			n++
		}
	}
	return n
}

// Refill arms free descriptors through write(i, addr) (Cursor.Refill)
// and reports whether the tail moved. A page is allocated and mapped when its slot
// has none.
func (r *PageRxRing) Refill(write func(i int, addr kernel.DMAAddr)) bool {
	return r.Cursor.Refill(r.arm, write)
}

func (r *PageRxRing) arm(i int) (kernel.DMAAddr, error) {
	return r.slots[i].Arm(r.dma, &r.Stats, &r.Pages)
}

// Receive takes the frame of length n at Clean. The caller has checked
// the descriptor's status and calls Advance afterwards.
func (r *PageRxRing) Receive(n int) (buffer.Buffer, Path, error) {
	s := &r.slots[r.Clean()]
	if s.Page == nil || !s.Mapped {
		r.Stats.Drop(DropDMA)
		return buffer.Buffer{}, 0, fmt.Errorf("ring: rx descriptor %d completed with no armed buffer", r.Clean())
	}
	if n <= 0 || n > HalfPage {
		r.Drop(DropLength)
		return buffer.Buffer{}, 0, fmt.Errorf("ring: rx length %d outside 1..%d", n, HalfPage)
	}
	a := s.Half()
	if err := r.dma.SyncForCPU(a, n, kernel.FromDevice); err != nil {
		r.Stats.Drop(DropDMA)
		s.GiveUp(r.dma, &r.Stats)
		return buffer.Buffer{}, 0, fmt.Errorf("ring: sync rx half at %#x for cpu: %w", uint64(a), err)
	}
	r.Stats.Frames.Add(1)
	r.Stats.Bytes.Add(uint64(n))
	frame := s.Page.AsSlice()[s.Off : s.Off+n]
	if r.hold.left > 0 || n < r.Copybreak() {
		r.hold.left = max(r.hold.left-1, 0)
		r.Stats.Copybreak.Add(1)
		return buffer.MakeWithView(buffer.NewViewWithData(frame)), Copied, nil
	}
	var buf buffer.Buffer
	if r.build.Load() {
		v := s.Page.Clone()
		v.TrimFront(s.Off)
		v.CapLength(n)
		buf = buffer.MakeWithView(v)
	} else {
		var shared bool
		if buf, shared = Construct(s.Page, s.Off, frame); !shared {
			r.Stats.Copybreak.Add(1) // all of it headers: the half stays armed
			return buf, Copied, nil
		}
	}
	r.Stats.Handoffs.Add(1)
	// The ring's reference and the one just made: if that is all, the
	// other half is free and the page stays.
	if s.Flip(r.dma, &r.Stats, &r.Pages) {
		r.hold.flipped(len(r.slots))
	} else {
		r.hold.gaveUp(len(r.slots))
		r.Pages.Holdoffs.Add(1)
	}
	return buf, Handoff, nil
}

// flipped counts a flip of a ring of n slots: after a turn's worth, the
// stack is keeping up and the next period starts short again.
func (h *holdoff) flipped(n int) {
	if h.flips++; h.flips >= n {
		h.period, h.flips = 0, 0
	}
}

// gaveUp starts a period of copies after a give-up in a ring of n slots.
func (h *holdoff) gaveUp(n int) {
	h.period = min(max(2*h.period, 1), maxHoldoff)
	h.left, h.flips = h.period*n, 0
}

// Peek returns the bytes of the frame of length n at Clean, synced for
// the CPU, without taking it: a packet program looks at them and then
// calls Receive, Drop or Keep. Valid until then.
func (r *PageRxRing) Peek(n int) ([]byte, error) {
	s := &r.slots[r.Clean()]
	if s.Page == nil || !s.Mapped {
		return nil, fmt.Errorf("ring: rx descriptor %d completed with no armed buffer", r.Clean())
	}
	if n <= 0 || n > HalfPage {
		return nil, fmt.Errorf("ring: rx length %d outside 1..%d", n, HalfPage)
	}
	a := s.Half()
	if err := r.dma.SyncForCPU(a, n, kernel.FromDevice); err != nil {
		return nil, fmt.Errorf("ring: sync rx half at %#x for cpu: %w", uint64(a), err)
	}
	return s.Page.AsSlice()[s.Off : s.Off+n], nil
}

// Keep counts the frame of length n at Clean as received and used in
// place (copied out, or dropped by a packet program after a look): its
// half stays with the ring and is re-armed.
func (r *PageRxRing) Keep(n int) {
	r.Stats.Frames.Add(1)
	r.Stats.Bytes.Add(uint64(n))
	r.Stats.Recycled.Add(1)
}

// Drop discards the frame at Clean and recycles its half.
func (r *PageRxRing) Drop(reason DropReason) {
	r.Stats.Drop(reason)
	r.Stats.Recycled.Add(1)
}

// Reset forgets the cursors after the device's ring was reset.
func (r *PageRxRing) Reset() {
	r.Rewind()
	r.Descs.Clear()
}

// Release gives up every page (the device must not own any descriptor),
// keeping the descriptors.
func (r *PageRxRing) Release() error {
	var errs []error
	for i := range r.slots {
		if err := r.slots[i].GiveUp(r.dma, &r.Stats); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close releases every page and frees the descriptors. The device must be
// stopped.
func (r *PageRxRing) Close() error {
	return errors.Join(r.Release(), r.Descs.Free())
}
