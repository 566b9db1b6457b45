//go:build linux

package metal

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/linux"
)

// Memory is kernel.Memory on the shim: Alloc takes physically contiguous
// pages from the shim (outside the Go heap, never paged out or moved),
// and Pin translates a Go buffer's pages, which the shim does not move
// either. x86 DMA snoops the caches, so the syncs do nothing.
type Memory struct {
	mu     sync.Mutex
	pinned map[pinKey]int
	allocs int
}

type pinKey struct {
	p uintptr
	n int
}

// NewMemory returns the shim's memory, or ErrNotMetal.
func NewMemory() (*Memory, error) {
	if !Running() {
		return nil, ErrNotMetal
	}
	return &Memory{pinned: make(map[pinKey]int)}, nil
}

// Alloc returns zeroed, physically contiguous memory aligned to align (a
// power of two; the shim aligns to a page at least).
func (m *Memory) Alloc(size, align int) (kernel.Region, error) {
	if size <= 0 || align <= 0 || align&(align-1) != 0 {
		return kernel.Region{}, fmt.Errorf("metal: alloc %d bytes aligned to %d: bad size or alignment", size, align)
	}
	pa, err := call("dma alloc", callDMAAlloc, uintptr(size), uintptr(max(align, kernel.PageSize)))
	if err != nil {
		return kernel.Region{}, fmt.Errorf("metal: alloc %d bytes: %w", size, err)
	}
	m.mu.Lock()
	m.allocs++
	m.mu.Unlock()
	return kernel.Region{Buf: identity(uint64(pa), size), Phys: kernel.PhysAddr(pa)}, nil
}

// Free gives a region from Alloc back to the shim, which refuses any
// other.
func (m *Memory) Free(r kernel.Region) error {
	if _, err := call("dma free", callDMAFree, uintptr(r.Phys), uintptr(len(r.Buf))); err != nil {
		return fmt.Errorf("metal: free %#x+%#x: %w", r.Phys, len(r.Buf), err)
	}
	m.mu.Lock()
	m.allocs--
	m.mu.Unlock()
	return nil
}

// Pin returns buf's physical segments, one per run of adjacent pages.
func (m *Memory) Pin(buf []byte) ([]kernel.Segment, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("metal: pin of an empty buffer")
	}
	var segs []kernel.Segment
	for off := 0; off < len(buf); {
		p := unsafe.Pointer(&buf[off])
		pa, err := Phys(p)
		if err != nil {
			return nil, fmt.Errorf("metal: pin: %w", err)
		}
		n := min(kernel.PageSize-int(uintptr(p)%kernel.PageSize), len(buf)-off)
		if l := len(segs) - 1; l >= 0 && uint64(segs[l].Phys)+uint64(segs[l].Len) == pa {
			segs[l].Len += n
		} else {
			segs = append(segs, kernel.Segment{Phys: kernel.PhysAddr(pa), Len: n})
		}
		off += n
	}
	k := pinKey{uintptr(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)}
	m.mu.Lock()
	m.pinned[k]++
	m.mu.Unlock()
	return segs, nil
}

// Unpin undoes one Pin of the same slice.
func (m *Memory) Unpin(buf []byte) error {
	k := pinKey{uintptr(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pinned[k] == 0 {
		return fmt.Errorf("metal: unpin of %d bytes at %#x that are not pinned", k.n, k.p)
	}
	if m.pinned[k]--; m.pinned[k] == 0 {
		delete(m.pinned, k)
	}
	return nil
}

// SyncForCPU and SyncForDevice do nothing: x86 DMA is cache coherent.
func (m *Memory) SyncForCPU(kernel.PhysAddr, int)    {}
func (m *Memory) SyncForDevice(kernel.PhysAddr, int) {}

// DMACoherent implements kernel.CoherentDMA.
func (m *Memory) DMACoherent() bool { return true }

// FlushCache writes buf back for a VT-d unit that does not snoop (ECAP.C=0).
func (m *Memory) FlushCache(buf []byte) { linux.FlushCache(buf) }

// Stats reports the regions allocated and the buffers pinned.
func (m *Memory) Stats() (allocs, pinned int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.allocs, len(m.pinned)
}
