package ring

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// Mode is how a received buffer leaves the ring.
type Mode uint32

const (
	// SyncNoUnmap keeps a buffer mapped until its frame is handed up: a
	// frame shorter than copybreak is copied out between SyncForCPU and
	// SyncForDevice and the buffer is re-armed as it is; error and discard
	// paths recycle without unmapping.
	SyncNoUnmap Mode = iota
	// UnmapAlways unmaps every completed buffer before looking at it and
	// re-maps it when re-arming: the behaviour the seed patch removed, kept
	// so both can be measured in one build.
	UnmapAlways
)

func (m Mode) String() string {
	switch m {
	case SyncNoUnmap:
		return "sync"
	case UnmapAlways:
		return "unmap"
	}
	return fmt.Sprintf("mode(%d)", uint32(m))
}

// ParseMode reads "sync" or "unmap".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "sync":
		return SyncNoUnmap, nil
	case "unmap":
		return UnmapAlways, nil
	}
	return 0, fmt.Errorf("ring: copybreak mode %q: want sync or unmap", s)
}

// Path says which way a received frame went up.
type Path uint8

const (
	Copied  Path = iota // copied into a right-sized view; the buffer stays in the ring
	Handoff             // the buffer itself went up; a fresh one replaces it
)

// DropReason classifies frames the driver refused.
type DropReason int

const (
	DropErrorBits DropReason = iota // the device flagged a frame error
	DropLength                      // length 0 or larger than the buffer
	DropMulti                       // part of a frame that spans buffers
	DropDMA                         // a sync or unmap failed
	numDropReasons
)

var dropNames = [numDropReasons]string{"rx_drop_error", "rx_drop_length", "rx_drop_multi", "rx_drop_dma"}

// RxStats counts what the RX path did. Safe to read while the ring runs.
type RxStats struct {
	Frames      atomic.Uint64
	Bytes       atomic.Uint64
	Copybreak   atomic.Uint64 // frames copied out, buffer kept
	Handoffs    atomic.Uint64 // buffers handed up
	Recycled    atomic.Uint64 // buffers re-armed after an error or discard
	Maps        atomic.Uint64 // streaming maps made by the ring
	Unmaps      atomic.Uint64
	MapFailures atomic.Uint64 // re-arm attempts that failed to map; retried later
	AllocFails  atomic.Uint64
	Drops       [numDropReasons]atomic.Uint64
}

// Drop counts one dropped frame.
func (s *RxStats) Drop(r DropReason) { s.Drops[r].Add(1) }

// Each calls fn for every counter in a stable order.
func (s *RxStats) Each(fn func(name string, v uint64)) {
	fn("rx_frames", s.Frames.Load())
	fn("rx_bytes", s.Bytes.Load())
	fn("rx_copybreak", s.Copybreak.Load())
	fn("rx_handoff", s.Handoffs.Load())
	fn("rx_recycled", s.Recycled.Load())
	fn("rx_maps", s.Maps.Load())
	fn("rx_unmaps", s.Unmaps.Load())
	fn("rx_map_failures", s.MapFailures.Load())
	fn("rx_alloc_failures", s.AllocFails.Load())
	for i := range s.Drops {
		fn(dropNames[i], s.Drops[i].Load())
	}
}

type rxSlot struct {
	view   *buffer.View // nil when the buffer went up the stack
	addr   kernel.DMAAddr
	mapped bool // still mapped for the device: re-arm without mapping
}

// RxRing is a receive ring: descriptors, one buffer per descriptor, and
// the cursor.
type RxRing struct {
	Cursor
	Descs *Descs
	Stats RxStats

	dma     kernel.DMA
	bufSize int
	slots   []rxSlot

	copybreak atomic.Int64
	mode      atomic.Uint32
}

// NewRxRing allocates n descriptors of descSize bytes with buffers of
// bufSize bytes. Buffers are mapped by the first Refill.
func NewRxRing(dma kernel.DMA, n, descSize, bufSize int) (*RxRing, error) {
	if bufSize <= 0 || bufSize > buffer.MaxChunkSize {
		return nil, fmt.Errorf("ring: rx buffer size %d out of range (1..%d)", bufSize, buffer.MaxChunkSize)
	}
	d, err := NewDescs(dma, n, descSize)
	if err != nil {
		return nil, err
	}
	return &RxRing{Cursor: NewCursor(n), Descs: d, dma: dma, bufSize: bufSize, slots: make([]rxSlot, n)}, nil
}

// BufSize is the size of every RX buffer.
func (r *RxRing) BufSize() int { return r.bufSize }

// newRxBuffer makes an RX buffer of size bytes in a chunk of whole pages
// of its own. The IOMMU maps whole pages: a 2 KiB buffer in a 2 KiB
// chunk shares its page with another chunk, which the device could then
// write with no fault, and gVisor hands 2 KiB chunks to the stack's own
// data (a received frame's copy among them). Linux bounces sub-page DMA
// buffers of untrusted devices for the same reason. It costs a ring of
// 256 e1000e buffers 512 KiB more.
func newRxBuffer(size int) *buffer.View {
	v := buffer.NewViewSize((size + kernel.PageSize - 1) &^ (kernel.PageSize - 1))
	v.CapLength(size)
	return v
}

// SetCopybreak sets the length below which frames are copied; 0 never copies.
func (r *RxRing) SetCopybreak(n int) { r.copybreak.Store(int64(n)) }

// Copybreak returns the current copybreak.
func (r *RxRing) Copybreak() int { return int(r.copybreak.Load()) }

// SetMode switches between SyncNoUnmap and UnmapAlways. Buffers already
// armed stay mapped and are handled correctly by either mode.
func (r *RxRing) SetMode(m Mode) { r.mode.Store(uint32(m)) }

// Mode returns the current mode.
func (r *RxRing) Mode() Mode { return Mode(r.mode.Load()) }

// Mapped counts the ring's buffers that are mapped for the device.
func (r *RxRing) Mapped() int {
	n := 0
	for i := range r.slots {
		if r.slots[i].mapped {
			n++
		}
	}
	return n
}

// Refill arms free descriptors through write(i, addr) (Cursor.Refill)
// and reports whether the tail moved. A buffer still mapped is re-armed
// without a new mapping; a mapping failure is counted and the buffer
// stays with its slot.
func (r *RxRing) Refill(write func(i int, addr kernel.DMAAddr)) bool {
	return r.Cursor.Refill(r.arm, write)
}

func (r *RxRing) arm(i int) (kernel.DMAAddr, error) {
	s := &r.slots[i]
	if s.view == nil {
		s.view = newRxBuffer(r.bufSize)
		if s.view.Size() != r.bufSize {
			s.view.Release()
			s.view = nil
			r.Stats.AllocFails.Add(1)
			return 0, fmt.Errorf("ring: rx buffer of %d bytes: %w", r.bufSize, kernel.ErrNoMemory)
		}
	}
	if s.mapped {
		return s.addr, nil
	}
	addr, err := r.dma.Map(s.view.AsSlice(), kernel.FromDevice)
	if err != nil {
		r.Stats.MapFailures.Add(1)
		return 0, fmt.Errorf("ring: map rx buffer %d: %w", i, err)
	}
	r.Stats.Maps.Add(1)
	s.addr, s.mapped = addr, true
	return addr, nil
}

// Receive takes the frame of length n in the buffer of the descriptor at
// Clean and returns it with the path it took. The caller has checked the
// descriptor's status; Receive checks the length. On error the frame is
// dropped and counted and the buffer recycled. The caller calls Advance.
func (r *RxRing) Receive(n int) (buffer.Buffer, Path, error) {
	i := r.Clean()
	s := &r.slots[i]
	if s.view == nil || !s.mapped {
		// Never armed: the device completed a descriptor it did not own.
		r.Stats.Drop(DropDMA)
		return buffer.Buffer{}, 0, fmt.Errorf("ring: rx descriptor %d completed with no armed buffer", i)
	}
	if n <= 0 || n > r.bufSize {
		r.Drop(DropLength)
		return buffer.Buffer{}, 0, fmt.Errorf("ring: rx length %d outside 1..%d", n, r.bufSize)
	}
	cb := r.Copybreak()
	if r.Mode() == UnmapAlways {
		if err := r.syncUnmap(s, n); err != nil {
			r.Stats.Drop(DropDMA)
			return buffer.Buffer{}, 0, err
		}
		if n < cb {
			return r.copyOut(s, n), Copied, nil
		}
		return r.handoff(s, n), Handoff, nil
	}
	if n < cb {
		if err := r.dma.SyncForCPU(s.addr, n, kernel.FromDevice); err != nil {
			r.Stats.Drop(DropDMA)
			return buffer.Buffer{}, 0, fmt.Errorf("ring: sync rx buffer %d for cpu: %w", i, err)
		}
		b := r.copyOut(s, n)
		if err := r.dma.SyncForDevice(s.addr, n, kernel.FromDevice); err != nil {
			// The copy is good; the buffer's ownership is in doubt, so
			// take it out of the device's reach before re-arming.
			r.unmap(s)
		}
		return b, Copied, nil
	}
	if err := r.syncUnmap(s, n); err != nil {
		r.Stats.Drop(DropDMA)
		return buffer.Buffer{}, 0, err
	}
	return r.handoff(s, n), Handoff, nil
}

// syncUnmap makes the n received bytes visible to the CPU and ends the
// mapping. The explicit sync keeps the frame intact on platforms whose
// unmap does not sync (it costs nothing where DMA is coherent).
func (r *RxRing) syncUnmap(s *rxSlot, n int) error {
	if err := r.dma.SyncForCPU(s.addr, n, kernel.FromDevice); err != nil {
		return fmt.Errorf("ring: sync rx buffer at %#x for cpu: %w", uint64(s.addr), err)
	}
	return r.unmap(s)
}

func (r *RxRing) copyOut(s *rxSlot, n int) buffer.Buffer {
	v := buffer.NewViewWithData(s.view.AsSlice()[:n])
	r.Stats.Copybreak.Add(1)
	r.Stats.Frames.Add(1)
	r.Stats.Bytes.Add(uint64(n))
	return buffer.MakeWithView(v)
}

func (r *RxRing) handoff(s *rxSlot, n int) buffer.Buffer {
	v := s.view
	s.view = nil
	v.CapLength(n)
	r.Stats.Handoffs.Add(1)
	r.Stats.Frames.Add(1)
	r.Stats.Bytes.Add(uint64(n))
	return buffer.MakeWithView(v)
}

func (r *RxRing) unmap(s *rxSlot) error {
	if !s.mapped {
		return nil
	}
	if err := r.dma.Unmap(s.addr, r.bufSize, kernel.FromDevice); err != nil {
		return fmt.Errorf("ring: unmap rx buffer at %#x: %w", uint64(s.addr), err)
	}
	r.Stats.Unmaps.Add(1)
	s.mapped = false
	s.addr = 0
	return nil
}

// Drop discards the frame at Clean for reason and recycles its buffer:
// kept mapped in SyncNoUnmap mode, unmapped (and re-mapped on re-arm) in
// UnmapAlways mode. The caller calls Advance.
func (r *RxRing) Drop(reason DropReason) {
	s := &r.slots[r.Clean()]
	if r.Mode() == UnmapAlways {
		r.unmap(s)
	}
	r.Stats.Drop(reason)
	r.Stats.Recycled.Add(1)
}

// Reset forgets the cursors after the device's ring was reset; buffers
// stay as they are and are re-armed by the next Refill from index 0.
func (r *RxRing) Reset() {
	r.Rewind()
	r.Descs.Clear()
}

// Close unmaps and releases every buffer and frees the descriptors. The
// device must be stopped.
func (r *RxRing) Close() error {
	var errs []error
	for i := range r.slots {
		s := &r.slots[i]
		if err := r.unmap(s); err != nil {
			errs = append(errs, err)
		}
		if s.view != nil {
			s.view.Release()
			s.view = nil
		}
	}
	if err := r.Descs.Free(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
