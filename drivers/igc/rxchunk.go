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

// chunkStats counts what the mapping pool did.
type chunkStats struct {
	Maps    atomic.Uint64 // chunks mapped for the first time
	Reuses  atomic.Uint64 // chunks armed again under their old mapping
	Evicted atomic.Uint64 // mappings dropped to stay within the bound
}

// Each calls fn for every counter in a stable order.
func (s *chunkStats) Each(fn func(name string, v uint64)) {
	fn("rx_chunk_maps", s.Maps.Load())
	fn("rx_chunk_reuses", s.Reuses.Load())
	fn("rx_chunk_evicted", s.Evicted.Load())
}

// chunkMap is one chunk's mapping, keyed by the chunk's data address.
type chunkMap struct {
	addr  kernel.DMAAddr
	buf   []byte // the chunk's data as mapped
	armed bool   // a slot holds the chunk; false: the stack has it, or the pool
}

// maxMapped bounds the mappings a ring of n slots keeps: its armed chunks
// and as many again out with the stack.
func maxMapped(n int) int { return 2 * n }

func chunkKey(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// armChunk gives an empty slot a chunk of its own, mapped, and returns
// the address the device writes the frame to.
func (r *rxRing) armChunk(s *rxPage, i int) (kernel.DMAAddr, error) {
	v := buffer.NewViewSize(rxBufLen)
	b := v.AsSlice()
	if len(b) != rxBufLen {
		v.Release()
		r.Stats.AllocFails.Add(1)
		return 0, fmt.Errorf("igc: rx chunk: %w", kernel.ErrNoMemory)
	}
	key := chunkKey(b)
	if m, ok := r.chunks[key]; ok && len(m.buf) == rxBufLen && !m.armed {
		// The stack let go of it; gVisor cleared it on the way out of
		// the pool, so it is written back before the device owns it.
		if err := r.dma.SyncForDevice(m.addr, rxBufLen, kernel.FromDevice); err != nil {
			v.Release()
			r.Stats.Drop(ring.DropDMA)
			return 0, fmt.Errorf("igc: sync rx chunk %d for device: %w", i, err)
		}
		m.armed = true
		r.Chunks.Reuses.Add(1)
		*s = rxPage{page: v, addr: m.addr, mapped: true, chunk: m}
		return m.addr + rxHeadroom, nil
	}
	if len(r.chunks) >= maxMapped(len(r.slots)) {
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
	m := &chunkMap{addr: addr, buf: b, armed: true}
	r.chunks[key] = m
	*s = rxPage{page: v, addr: addr, mapped: true, chunk: m}
	return addr + rxHeadroom, nil
}

// handChunk gives the slot's chunk, the frame of n bytes in it, to the
// stack: the view the slot held goes up as it is, the slot is empty, the
// mapping stays for the chunk's return.
func (r *rxRing) handChunk(s *rxPage, n int) *buffer.View {
	v := s.page
	s.chunk.armed = false
	v.TrimFront(rxHeadroom)
	v.CapLength(n)
	*s = rxPage{}
	return v
}

// evictChunks unmaps every chunk no slot holds, so that the next maps
// start a fresh generation; chunks the stack still holds stay its own.
func (r *rxRing) evictChunks() error {
	var errs []error
	for key, m := range r.chunks {
		if m.armed {
			continue
		}
		delete(r.chunks, key)
		if err := r.dma.Unmap(m.addr, rxBufLen, kernel.FromDevice); err != nil {
			errs = append(errs, fmt.Errorf("igc: unmap rx chunk at %#x: %w", uint64(m.addr), err))
			continue
		}
		r.Stats.Unmaps.Add(1)
		r.Chunks.Evicted.Add(1)
	}
	return errors.Join(errs...)
}

// dropChunk unmaps and releases an armed slot's chunk.
func (r *rxRing) dropChunk(s *rxPage) error {
	var err error
	delete(r.chunks, chunkKey(s.page.AsSlice()))
	if err = r.dma.Unmap(s.addr, rxBufLen, kernel.FromDevice); err == nil {
		r.Stats.Unmaps.Add(1)
	} else {
		err = fmt.Errorf("igc: unmap rx chunk at %#x: %w", uint64(s.addr), err)
	}
	s.page.Release()
	*s = rxPage{}
	return err
}
