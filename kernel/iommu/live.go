package iommu

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/kernel"
)

// mapping is one live Map or AllocCoherent.
type mapping struct {
	addr   kernel.DMAAddr // what Map returned: iova plus the buffer's page offset
	iova   uint64         // page-aligned start of the IOVA range
	span   uint64         // bytes of IOVA range, a page multiple
	size   int            // bytes the caller mapped
	dir    kernel.Direction
	segs   []kernel.Segment // the physical pieces behind addr, in order
	buf    []byte           // pinned streaming buffer
	region *kernel.Region   // coherent allocation
}

// holds reports whether the mapped bytes include addr.
func (m *mapping) holds(addr kernel.DMAAddr) bool {
	return addr >= m.addr && uint64(addr-m.addr) < uint64(m.size)
}

// hitSlots sizes a liveMaps' cache, a power of two: a device's live
// mappings, mapped first-fit into a run of pages, each keep a slot of
// their own. An igc queue in the build layout keeps up to 512 RX chunks
// mapped beside its TX buffers and its rings; with 512 slots those
// pages shared slots and 38% of its syncs missed (TestSyncIndexHoldsABuildRing).
// 2048 slots cost 16 KiB per device.
const hitSlots = 2048

// liveMaps indexes one device's live mappings by DMA address. Every frame
// syncs its buffer, so finding the mapping must cost neither the unit's
// lock nor an allocation: a sync first tries the mapping last found in its
// address's page, without a lock, and only on a miss searches the sorted
// list under the shared lock. A mapping's fields do not change while it is
// indexed, and remove clears every slot that holds it before the mapping's
// memory or address can be reused.
type liveMaps struct {
	mu     sync.RWMutex
	sorted []*mapping                        // by addr; ranges never overlap
	hits   [hitSlots]atomic.Pointer[mapping] // by page of a DMA address
}

func hitSlot(addr kernel.DMAAddr) int { return int(addr/kernel.PageSize) & (hitSlots - 1) }

// add indexes m; its range must not overlap a live one.
func (l *liveMaps) add(m *mapping) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.sorted), func(i int) bool { return l.sorted[i].addr > m.addr })
	l.sorted = slices.Insert(l.sorted, i, m)
}

// remove forgets m and drops it from the cache.
func (l *liveMaps) remove(m *mapping) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := sort.Search(len(l.sorted), func(i int) bool { return l.sorted[i].addr >= m.addr }); i < len(l.sorted) && l.sorted[i] == m {
		l.sorted = slices.Delete(l.sorted, i, i+1)
	}
	first, last := m.addr/kernel.PageSize, (m.addr+kernel.DMAAddr(m.size)-1)/kernel.PageSize
	if last-first >= hitSlots {
		for i := range l.hits {
			l.hits[i].CompareAndSwap(m, nil)
		}
		return
	}
	for p := first; p <= last; p++ {
		l.hits[hitSlot(p*kernel.PageSize)].CompareAndSwap(m, nil)
	}
}

// exact returns the live mapping that starts at addr.
func (l *liveMaps) exact(addr kernel.DMAAddr) *mapping {
	if m := l.containing(addr); m != nil && m.addr == addr {
		return m
	}
	return nil
}

// containing returns the live mapping whose bytes include addr, or nil.
func (l *liveMaps) containing(addr kernel.DMAAddr) *mapping {
	slot := &l.hits[hitSlot(addr)]
	if m := slot.Load(); m != nil && m.holds(addr) {
		return m
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	// The last mapping starting at or below addr, searched by hand: a
	// closure for sort.Search costs more than the search.
	lo, hi := 0, len(l.sorted)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.sorted[mid].addr <= addr {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 || !l.sorted[lo-1].holds(addr) {
		return nil
	}
	m := l.sorted[lo-1]
	slot.Store(m) // under the shared lock: remove cannot run meanwhile
	return m
}

// overlaps reports whether [addr, addr+size) shares a byte with a live
// mapping.
func (l *liveMaps) overlaps(addr kernel.DMAAddr, size int) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i := sort.Search(len(l.sorted), func(i int) bool { return l.sorted[i].addr >= addr })
	if i > 0 && l.sorted[i-1].holds(addr) {
		return true
	}
	return i < len(l.sorted) && uint64(l.sorted[i].addr) < uint64(addr)+uint64(size)
}

// syncer does the memory's side of a sync.
type syncer struct {
	mem kernel.Memory
	coh kernel.CoherentDMA // nil when the memory cannot say: always sync
}

func newSyncer(mem kernel.Memory) syncer {
	c, _ := mem.(kernel.CoherentDMA)
	return syncer{mem: mem, coh: c}
}

// sync checks that [addr, addr+size) lies in one live mapping of
// direction dir and, unless streaming DMA is coherent, syncs the physical
// pieces under it for the CPU or for the device.
func (s syncer) sync(l *liveMaps, addr kernel.DMAAddr, size int, dir kernel.Direction, forCPU bool) error {
	if size <= 0 {
		return kernel.ErrZeroLength
	}
	if !validDir(dir) {
		return fmt.Errorf("direction %d: %w", dir, kernel.ErrBadAddress)
	}
	m := l.containing(addr)
	if m == nil || uint64(addr)+uint64(size) > uint64(m.addr)+uint64(m.size) {
		return kernel.ErrNotMapped
	}
	if dir != m.dir {
		return fmt.Errorf("direction %v, mapped %v: %w", dir, m.dir, kernel.ErrBadAddress)
	}
	if s.coh != nil && s.coh.DMACoherent() {
		return nil
	}
	// Segments are few (one, unless the buffer's pages are scattered):
	// skip to the one holding addr, then sync piece by piece.
	off := int(addr - m.addr)
	for _, seg := range m.segs {
		if off >= seg.Len {
			off -= seg.Len
			continue
		}
		n := min(size, seg.Len-off)
		if p := seg.Phys + kernel.PhysAddr(off); forCPU {
			s.mem.SyncForCPU(p, n)
		} else {
			s.mem.SyncForDevice(p, n)
		}
		if size -= n; size == 0 {
			break
		}
		off = 0
	}
	return nil
}
