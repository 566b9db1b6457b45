package igc

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// A build-layout ring gives every 2 KiB buffer a gVisor chunk of its own
// and hands that chunk up whole: the packet holds the only reference, so
// the stack's header pull-up reads it in place instead of copying a chunk
// the ring still shares (gVisor's views are copy-on-write on any shared
// chunk). The ring takes a fresh 2 KiB chunk from gVisor's pool for the
// slot. gVisor's reference count decides when a handed-up chunk is free
// again: it re-enters the pool only when the last view on it goes, and
// the pool gives it back to the next refill. So, page_pool style, the
// ring keeps its chunks' mappings: a chunk the pool returns that was
// mapped before is armed again with a sync, not a new map. At most
// maxMapped(n) chunks stay mapped; past that the ring unmaps the chunks
// that are not armed.
//
// The trade is Linux's lazy IOMMU mode: a chunk the stack holds stays
// mapped for the device's writes, though no descriptor points at it.
//
// The pool clears every chunk it hands out, 2 KiB per frame where
// construct's head costs 64 B. So a packet offers its chunk back as the
// stack lets go of it (nic.RxPacket.Recycle, run when the packet's last
// reference goes): if its view is the chunk's only holder, the ring takes
// a reference of its own and keeps the chunk on a short list, and the
// next refill re-arms it under its mapping with no pool and no clear. A
// chunk anybody else still holds is refused and goes the pool's way. The
// list is the only reference while a chunk waits there, so the stack
// again holds the only one when the chunk next goes up.

// chunkStats counts what the mapping pool did.
type chunkStats struct {
	Maps    atomic.Uint64 // chunks mapped for the first time
	Reuses  atomic.Uint64 // chunks from the pool armed again under their old mapping
	Returns atomic.Uint64 // chunks taken back from released packets, re-armed without the pool
	Refused atomic.Uint64 // offered chunks another view still held, or the ring had closed
	Evicted atomic.Uint64 // mappings dropped to stay within the bound
}

// Each calls fn for every counter in a stable order.
func (s *chunkStats) Each(fn func(name string, v uint64)) {
	fn("rx_chunk_maps", s.Maps.Load())
	fn("rx_chunk_reuses", s.Reuses.Load())
	fn("rx_chunk_returns", s.Returns.Load())
	fn("rx_chunk_refused", s.Refused.Load())
	fn("rx_chunk_evicted", s.Evicted.Load())
}

// chunkReturns lists the chunks taken back from released packets, each
// under the ring's own reference. Packets are released on any goroutine:
// they push onto a lock-free stack, and the refill takes the whole stack
// at once into a list of its own. A chunk is listed at most once, as only
// its sole holder may offer it, so the list needs no bound beyond the
// mappings'.
type chunkReturns struct {
	head   atomic.Pointer[chunkMap]
	closed atomic.Bool // the ring is gone: offers are let go
	taken  *chunkMap   // the refill's list, oldest first; RxMu held
}

// chunkMap is one chunk's mapping.
type chunkMap struct {
	key   uintptr // the chunk's data address, compared only
	addr  kernel.DMAAddr
	armed bool               // a slot holds the chunk; false: the stack has it, the pool, or the returns list
	kept  bool               // in the chunk table, mapped; RxMu held
	offer func(*buffer.View) // the packet's recycle hook: takeBack for this chunk
	back  *buffer.View       // listed in the returns: the ring's reference
	next  *chunkMap          // listed in the returns: the one listed before
}

// maxMapped bounds the mappings a ring of n slots keeps: its armed chunks
// and as many again out with the stack.
func maxMapped(n int) int { return 2 * n }

func chunkKey(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// armChunk gives an empty slot a chunk of its own, mapped, and returns
// the address the device writes the frame to.
func (r *rxRing) armChunk(s *rxPage, i int) (kernel.DMAAddr, error) {
	if v, m := r.returned(); v != nil {
		// The frame it held is stale; the stack may have written it, so
		// it is written back before the device owns it.
		if err := r.dma.SyncForDevice(m.addr, rxBufLen, kernel.FromDevice); err != nil {
			v.Release()
			r.Stats.Drop(ring.DropDMA)
			return 0, fmt.Errorf("igc: sync returned rx chunk %d for device: %w", i, err)
		}
		m.armed = true
		r.tally.returns++
		*s = rxPage{PageSlot: ring.PageSlot{Page: v, Addr: m.addr, Mapped: true}, chunk: m}
		return m.addr + rxHeadroom, nil
	}
	v := buffer.NewViewSize(rxBufLen)
	b := v.AsSlice()
	if len(b) != rxBufLen {
		v.Release()
		r.Stats.AllocFails.Add(1)
		return 0, fmt.Errorf("igc: rx chunk: %w", kernel.ErrNoMemory)
	}
	key := chunkKey(b)
	if m := r.chunks.get(key); m != nil {
		if m.armed {
			// Only a chunk no slot holds can come out of the pool.
			v.Release()
			r.Stats.Drop(ring.DropDMA)
			return 0, fmt.Errorf("igc: rx chunk %d: pool returned a chunk slot armed already: %w", i, kernel.ErrBadAddress)
		}
		// The stack let go of it; gVisor cleared it on the way out of
		// the pool, so it is written back before the device owns it.
		if err := r.dma.SyncForDevice(m.addr, rxBufLen, kernel.FromDevice); err != nil {
			v.Release()
			r.Stats.Drop(ring.DropDMA)
			return 0, fmt.Errorf("igc: sync rx chunk %d for device: %w", i, err)
		}
		m.armed = true
		r.Chunks.Reuses.Add(1)
		*s = rxPage{PageSlot: ring.PageSlot{Page: v, Addr: m.addr, Mapped: true}, chunk: m}
		return m.addr + rxHeadroom, nil
	}
	if r.chunks.len() >= maxMapped(len(r.slots)) {
		r.evictChunks()
	}
	addr, err := r.dma.Map(b, kernel.FromDevice)
	if err != nil {
		v.Release()
		r.Stats.MapFailures.Add(1)
		return 0, fmt.Errorf("igc: map rx chunk %d: %w", i, err)
	}
	r.Stats.Maps.Add(1)
	r.Chunks.Maps.Add(1)
	m := &chunkMap{key: key, addr: addr, armed: true, kept: true}
	m.offer = func(v *buffer.View) { r.takeBack(m, v) }
	r.chunks.put(m)
	*s = rxPage{PageSlot: ring.PageSlot{Page: v, Addr: addr, Mapped: true}, chunk: m}
	return addr + rxHeadroom, nil
}

// handChunk gives the slot's chunk, the frame of n bytes in it, to the
// stack: the view the slot held goes up as it is, with the hook that
// offers it back, the slot is empty, the mapping stays for the return.
func (r *rxRing) handChunk(s *rxPage, n int) (*buffer.View, func(*buffer.View)) {
	v, m := s.Page, s.chunk
	m.armed = false
	v.TrimFront(rxHeadroom)
	v.CapLength(n)
	*s = rxPage{}
	return v, m.offer
}

// takeBack is a released packet offering the first view of its data: if
// it is a view of m's chunk and the chunk's only holder, the ring takes a
// reference of its own and lists the chunk for the next refill. It runs
// on whatever goroutine released the packet, before the packet's views
// go.
func (r *rxRing) takeBack(m *chunkMap, v *buffer.View) {
	if !isChunkOf(v, m.key) {
		return
	}
	if refs, ok := ring.Refs(v); !ok || refs != 1 {
		r.Chunks.Refused.Add(1)
		return
	}
	b := &r.returns
	if b.closed.Load() {
		r.Chunks.Refused.Add(1)
		return
	}
	m.back = v.Clone()
	for {
		old := b.head.Load()
		m.next = old
		if b.head.CompareAndSwap(old, m) {
			break
		}
	}
	if b.closed.Load() { // closed meanwhile: nobody else will let it go
		releaseReturns(b.head.Swap(nil))
	}
}

// isChunkOf reports whether v views a whole-chunk buffer whose data starts
// at key: the view's bytes, less the bytes already read past, start there.
func isChunkOf(v *buffer.View, key uintptr) bool {
	b := v.AsSlice()
	if len(b) == 0 || v.Capacity() != rxBufLen {
		return false
	}
	read := v.Capacity() - v.AvailableSize() - len(b)
	return chunkKey(b)-uintptr(read) == key
}

// returned takes the oldest listed chunk whose mapping is still kept, as
// a view of the whole chunk; stale ones (their mapping was evicted
// meanwhile) are let go.
func (r *rxRing) returned() (*buffer.View, *chunkMap) {
	b := &r.returns
	for {
		m := b.taken
		if m == nil {
			if m = inOrder(b.head.Swap(nil)); m == nil {
				return nil, nil
			}
		}
		b.taken = m.next
		v := m.back
		m.back, m.next = nil, nil
		if m.kept && !m.armed {
			v.Reset()
			v.Grow(rxBufLen)
			return v, m
		}
		v.Release()
	}
}

// inOrder reverses a list taken off the returns stack, so that chunks are
// re-armed in the order they came back: slots refilled in a row then get
// chunks the ring handed up in a row, whose mappings lie together, as
// they did when first mapped; the stack's newest-first order would
// scatter them a little more every round.
func inOrder(m *chunkMap) *chunkMap {
	var out *chunkMap
	for m != nil {
		next := m.next
		m.next = out
		out, m = m, next
	}
	return out
}

// dropReturns lets go of every listed chunk; closing also refuses later
// offers.
func (r *rxRing) dropReturns(closing bool) {
	b := &r.returns
	if closing {
		b.closed.Store(true)
	}
	releaseReturns(b.taken)
	b.taken = nil
	releaseReturns(b.head.Swap(nil))
}

// releaseReturns drops the ring's references along a list.
func releaseReturns(m *chunkMap) {
	for m != nil {
		next := m.next
		m.back.Release()
		m.back, m.next = nil, nil
		m = next
	}
}

// evictChunks unmaps every chunk no slot holds, so that the next maps
// start a fresh generation; chunks the stack still holds stay its own.
func (r *rxRing) evictChunks() error {
	var errs []error
	for _, m := range r.chunks.all() {
		if m.armed {
			continue
		}
		if err := r.unmapChunk(m); err != nil {
			errs = append(errs, err)
			continue
		}
		r.Chunks.Evicted.Add(1)
	}
	return errors.Join(errs...)
}

// unmapChunk forgets a mapping no slot holds and unmaps it.
func (r *rxRing) unmapChunk(m *chunkMap) error {
	r.chunks.del(m.key)
	m.kept = false
	if err := r.dma.Unmap(m.addr, rxBufLen, kernel.FromDevice); err != nil {
		return fmt.Errorf("igc: unmap rx chunk at %#x: %w", uint64(m.addr), err)
	}
	r.Stats.Unmaps.Add(1)
	return nil
}

// dropChunk unmaps and releases an armed slot's chunk.
func (r *rxRing) dropChunk(s *rxPage) error {
	var err error
	r.chunks.del(s.chunk.key)
	s.chunk.kept = false
	if err = r.dma.Unmap(s.Addr, rxBufLen, kernel.FromDevice); err == nil {
		r.Stats.Unmaps.Add(1)
	} else {
		err = fmt.Errorf("igc: unmap rx chunk at %#x: %w", uint64(s.Addr), err)
	}
	s.Page.Release()
	*s = rxPage{}
	return err
}
