package sim

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// Physical layout: RAM handed out from physBase up, skipping the 32-bit
// MMIO hole where the ECAM window, BARs and the VT-d unit live.
const (
	physBase  = 0x0010_0000
	holeStart = 0xb000_0000
	holeEnd   = 0x1_0000_0000
	lineSize  = 64 // cache line, the granule of FlushCache
	maxAlloc  = 1 << 30

	// recentSlots sizes find's cache, a power of two: a ring's buffers
	// and descriptors each hit their own slot.
	recentSlots = 1024
)

// span is one registered, physically contiguous piece of memory.
type span struct {
	phys kernel.PhysAddr
	cpu  []byte  // the CPU's view: the Go slice itself
	dev  []byte  // the device's view when non-coherent; nil when coherent
	key  uintptr // address of cpu[0], compared only, never dereferenced
	pin  bool    // from Pin (streaming, may be non-coherent); else Alloc
	refs int     // pinnings holding a Pin'd span: it goes with the last
	// own holds the byte ranges of a pinned span last synced for the CPU
	// and not yet handed back with SyncForDevice: sorted, disjoint, never
	// touching. Empty (everything the device's) from Pin on.
	own []ownRange
}

// ownRange is [lo, hi) of a span's bytes.
type ownRange struct{ lo, hi int }

func (s *span) end() kernel.PhysAddr { return s.phys + kernel.PhysAddr(len(s.cpu)) }

// pinning is one Pin'd buffer: the spans holding its bytes (some shared
// with buffers pinned before it), its segments and how many Pins hold it.
type pinning struct {
	refs  int
	spans []*span
	segs  []kernel.Segment
}

// pinKey names one Pin'd buffer: its first byte and its length.
type pinKey struct {
	key uintptr
	n   int
}

// MemStats counts Memory's work and misuse.
type MemStats struct {
	Allocs, Frees, Pins, Unpins uint64
	SyncsForCPU, SyncsForDevice uint64
	Flushes                     uint64
	Misuses                     uint64 // bad syncs or flushes, device writes to CPU-owned bytes; see Errors
	BytesRegistered             uint64
}

// Memory is guest physical memory: a kernel.Memory whose physical
// addresses are a registry of Go slices. Physical pages are never handed
// out twice, and a guard page separates allocations, so a device overrun
// reads unregistered memory and fails.
//
// Coherence: Alloc'd memory is always coherent. With SetCoherent(false),
// Pin'd buffers get a device-side copy: device writes land there and reach
// the CPU slice only at SyncForCPU; CPU writes reach the device at
// SyncForDevice. With SetFlushTracking(true), the table walker's view
// (TableView) sees CPU writes only after FlushCache, like a unit that does
// not snoop caches.
//
// Ownership: the syncs hand a Pin'd buffer's bytes back and forth as the
// DMA API defines. A Pin, like a map, gives the whole buffer to the
// device (another Pin of a pinned buffer too); SyncForCPU of a range
// gives it to the CPU, SyncForDevice gives it back. A device write to
// bytes the CPU owns is a misuse (the CPU may be reading them, or hold
// them in its caches), counted and recorded like a bad sync; the write
// still lands, as it would on hardware. This is tracked while the memory
// sees every sync: always on non-coherent memory, and on coherent memory
// with SetCheckOwnership(true), which makes DMACoherent report false so
// that the DMA layer does not skip them.
//
// Device models must order their accesses with the CPU's (through the
// register window's lock, an IRQ, or the syncs): Go slices are shared
// memory and the race detector checks them.
type Memory struct {
	mu        sync.Mutex
	coherent  bool        // Pin'd spans have no device copy
	checkOwn  bool        // coherent memory takes syncs to track ownership
	skipSyncs atomic.Bool // coherent && !checkOwn: written under mu; read without it by DMACoherent
	scatter   bool
	tracking  bool
	next      kernel.PhysAddr
	spans     []*span // sorted by phys
	byKey     []*span // sorted by key
	allocs    map[kernel.PhysAddr]*span
	pins      map[pinKey]*pinning
	flushed   map[kernel.PhysAddr]*[kernel.PageSize]byte // walker's view of flushed pages
	recent    [recentSlots]*span                         // find's cache: the span last found in a page, by page number
	errs      []error
	stats     MemStats
}

// NewMemory returns empty, coherent memory.
func NewMemory() *Memory {
	m := &Memory{
		next:    physBase,
		allocs:  make(map[kernel.PhysAddr]*span),
		pins:    make(map[pinKey]*pinning),
		flushed: make(map[kernel.PhysAddr]*[kernel.PageSize]byte),
	}
	m.coherent = true
	m.skipSyncs.Store(true)
	return m
}

var _ kernel.CoherentDMA = (*Memory)(nil)

// DMACoherent reports whether the syncs of streaming memory have nothing
// to do: it is coherent and does not track ownership. Alloc'd memory is
// always coherent.
func (m *Memory) DMACoherent() bool { return m.skipSyncs.Load() }

// SetCoherent switches streaming (Pin'd) memory between coherent and
// non-coherent. Going non-coherent gives every pinned buffer a device copy
// of its current contents; going coherent hands the device's data to the
// CPU.
func (m *Memory) SetCoherent(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on == m.coherent {
		return
	}
	// Syncs skipped on the flag's word must find the CPU slices current:
	// it says coherent only once the device copies are folded back, and
	// stops saying so before they exist.
	if !on {
		m.skipSyncs.Store(false)
	}
	for _, s := range m.spans {
		if !s.pin {
			continue
		}
		if on {
			copy(s.cpu, s.dev)
			s.dev = nil
		} else {
			s.dev = slices.Clone(s.cpu)
		}
	}
	m.coherent = on
	m.setSkip()
}

// SetCheckOwnership makes coherent streaming memory take every sync, only
// to track who owns each byte (see Memory): DMACoherent reports false
// while it is on. Non-coherent memory tracks ownership either way.
func (m *Memory) SetCheckOwnership(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checkOwn = on
	if on {
		m.skipSyncs.Store(false)
	}
	m.setSkip()
}

// setSkip publishes whether syncs may be skipped. Once they are, the
// memory stops seeing them and forgets what it knew: every byte is the
// device's again, as nothing can be told otherwise.
func (m *Memory) setSkip() {
	skip := m.coherent && !m.checkOwn
	if skip {
		for _, s := range m.spans {
			s.own = s.own[:0]
		}
	}
	m.skipSyncs.Store(skip)
}

// owning reports whether the memory sees every sync and so tracks
// ownership.
func (m *Memory) owning() bool { return !m.coherent || m.checkOwn }

// SetScatter makes every later Pin place each page of a buffer on its own,
// non-adjacent physical page, so callers must handle many segments.
func (m *Memory) SetScatter(on bool) {
	m.mu.Lock()
	m.scatter = on
	m.mu.Unlock()
}

// SetFlushTracking turns on the non-snooping table walker's view: from now
// on TableView reads return what FlushCache wrote back, and zeroes (the
// contents at allocation) for what was never flushed.
func (m *Memory) SetFlushTracking(on bool) {
	m.mu.Lock()
	m.tracking = on
	m.mu.Unlock()
}

// Stats returns the counters.
func (m *Memory) Stats() MemStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Errors returns the misuses seen by calls that cannot return an error
// (syncs and flushes of unregistered memory) or that a device cannot be
// told of (writes to bytes the CPU owns), oldest first, at most 64.
func (m *Memory) Errors() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.errs)
}

func (m *Memory) misuse(err error) {
	m.stats.Misuses++
	if len(m.errs) < 64 {
		m.errs = append(m.errs, err)
	}
}

func keyOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// reserve hands out n bytes of physical address space aligned to align,
// followed by an unregistered guard page.
func (m *Memory) reserve(n, align uint64) (kernel.PhysAddr, error) {
	p := (uint64(m.next) + align - 1) &^ (align - 1)
	if p < holeEnd && p+n > holeStart {
		p = (holeEnd + align - 1) &^ (align - 1)
	}
	end := p + (n+kernel.PageSize-1)&^(kernel.PageSize-1) + kernel.PageSize
	if end < p || end > 1<<46 {
		return 0, fmt.Errorf("sim memory: %d bytes: %w", n, kernel.ErrNoMemory)
	}
	m.next = kernel.PhysAddr(end)
	return kernel.PhysAddr(p), nil
}

func (m *Memory) insert(s *span) {
	i, _ := slices.BinarySearchFunc(m.spans, s.phys, func(x *span, p kernel.PhysAddr) int { return cmpAddr(x.phys, p) })
	m.spans = slices.Insert(m.spans, i, s)
	j, _ := slices.BinarySearchFunc(m.byKey, s.key, func(x *span, k uintptr) int { return cmpAddr(x.key, k) })
	m.byKey = slices.Insert(m.byKey, j, s)
	m.stats.BytesRegistered += uint64(len(s.cpu))
}

func (m *Memory) remove(s *span) {
	// Spans never overlap in either order, so each search finds s itself.
	if i, ok := slices.BinarySearchFunc(m.spans, s.phys, func(x *span, p kernel.PhysAddr) int { return cmpAddr(x.phys, p) }); ok {
		m.spans = slices.Delete(m.spans, i, i+1)
	}
	if i, ok := slices.BinarySearchFunc(m.byKey, s.key, func(x *span, k uintptr) int { return cmpAddr(x.key, k) }); ok {
		m.byKey = slices.Delete(m.byKey, i, i+1)
	}
	for p := s.phys &^ (kernel.PageSize - 1); p < s.end(); p += kernel.PageSize {
		delete(m.flushed, p)
		if slot := recentSlot(p); m.recent[slot] == s {
			m.recent[slot] = nil
		}
	}
	m.stats.BytesRegistered -= uint64(len(s.cpu))
}

func cmpAddr[T kernel.PhysAddr | uintptr](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func recentSlot(p kernel.PhysAddr) int { return int(p/kernel.PageSize) & (recentSlots - 1) }

// find returns the span holding physical address p.
func (m *Memory) find(p kernel.PhysAddr) *span {
	// Every DMA and sync comes here, mostly to a span it found before:
	// try the one last found in p's page, then search.
	slot := recentSlot(p)
	if s := m.recent[slot]; s != nil && s.phys <= p && p < s.end() {
		return s
	}
	s := m.search(p)
	if s != nil {
		m.recent[slot] = s
	}
	return s
}

// search finds the last span starting at or below p, if it holds p.
func (m *Memory) search(p kernel.PhysAddr) *span {
	lo, hi := 0, len(m.spans)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.spans[mid].phys <= p {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo > 0 && p < m.spans[lo-1].end() {
		return m.spans[lo-1]
	}
	return nil
}

// findCPU returns the span whose CPU slice holds the byte at key.
func (m *Memory) findCPU(key uintptr) *span {
	lo, hi := 0, len(m.byKey)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.byKey[mid].key <= key {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo > 0 && key < m.byKey[lo-1].key+uintptr(len(m.byKey[lo-1].cpu)) {
		return m.byKey[lo-1]
	}
	return nil
}

// Alloc returns zeroed, coherent, physically contiguous memory.
func (m *Memory) Alloc(size, align int) (kernel.Region, error) {
	if size <= 0 {
		return kernel.Region{}, fmt.Errorf("sim memory: alloc of %d bytes: %w", size, kernel.ErrZeroLength)
	}
	if align <= 0 || align&(align-1) != 0 {
		return kernel.Region{}, fmt.Errorf("sim memory: alloc alignment %d is not a power of two: %w", align, kernel.ErrUnaligned)
	}
	if size > maxAlloc || align > maxAlloc {
		return kernel.Region{}, fmt.Errorf("sim memory: alloc of %d bytes aligned to %d: larger than %d: %w", size, align, maxAlloc, kernel.ErrNoMemory)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.reserve(uint64(size), uint64(max(align, kernel.PageSize)))
	if err != nil {
		return kernel.Region{}, err
	}
	buf := make([]byte, size)
	s := &span{phys: p, cpu: buf, key: keyOf(buf)}
	m.insert(s)
	m.allocs[p] = s
	m.stats.Allocs++
	return kernel.Region{Buf: buf, Phys: p}, nil
}

// Free releases a region from Alloc. Its physical pages are never reused.
func (m *Memory) Free(r kernel.Region) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.allocs[r.Phys]
	if !ok {
		return fmt.Errorf("sim memory: free of %#x: no allocation there: %w", r.Phys, kernel.ErrBadAddress)
	}
	if len(r.Buf) != len(s.cpu) || keyOf(r.Buf) != s.key {
		return fmt.Errorf("sim memory: free of %#x: buffer is not the one allocated there: %w", r.Phys, kernel.ErrBadAddress)
	}
	delete(m.allocs, r.Phys)
	m.remove(s)
	m.stats.Frees++
	return nil
}

// Pin registers buf and returns its physical segments. The physical pages
// keep buf's offset within its first page, as on a real machine.
//
// Memory has one physical address however often it is pinned, as on a
// real machine, where mapping a page twice is allowed: bytes that buffers
// pinned before already hold (one chunk cut into several packets, or sent
// while the driver keeps it mapped for receive) keep their physical
// addresses and are shared, and only the rest get new pages, so such a
// buffer may come in several segments. Pinning the same buffer again
// returns the same segments and takes a reference. Either way the
// buffer's bytes are the device's from the pin on (a map hands them
// over), and on non-coherent memory the device sees what the CPU wrote.
func (m *Memory) Pin(buf []byte) ([]kernel.Segment, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("sim memory: pin: %w", kernel.ErrZeroLength)
	}
	k := pinKey{keyOf(buf), len(buf)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.pins[k]; ok {
		// Another map of the buffer hands all of it to the device, as
		// the first did, whatever the CPU owned under an earlier one
		// (an unmap the IOMMU has not finished yet keeps that pin).
		for _, s := range p.spans {
			lo, hi := s.part(buf)
			m.handOver(s, lo, hi)
		}
		p.refs++
		m.stats.Pins++
		return slices.Clone(p.segs), nil
	}
	pin := &pinning{refs: 1}
	var before *span // the span holding the byte before a gap, if buf shares it
	for off := 0; off < len(buf); {
		at := k.key + uintptr(off)
		if s := m.findCPU(at); s != nil {
			if !s.pin {
				m.unpinSpans(pin)
				return nil, fmt.Errorf("sim memory: pin of %d bytes: overlaps allocated memory: %w", len(buf), kernel.ErrBadAddress)
			}
			lo, hi := s.part(buf)
			s.refs++
			pin.spans = append(pin.spans, s)
			pin.addSeg(s.phys+kernel.PhysAddr(lo), hi-lo)
			m.handOver(s, lo, hi)
			off += hi - lo
			before = s
			continue
		}
		// Up to the next registered span, or buf's end, no span holds
		// a byte.
		end := len(buf)
		var after *span
		i, _ := slices.BinarySearchFunc(m.byKey, at, func(x *span, k uintptr) int { return cmpAddr(x.key, k) })
		if i < len(m.byKey) && m.byKey[i].key < k.key+uintptr(len(buf)) {
			end, after = int(m.byKey[i].key-k.key), m.byKey[i]
		}
		if err := m.pinGap(pin, buf[off:end:end], before, after); err != nil {
			m.unpinSpans(pin)
			return nil, err
		}
		off = end
	}
	m.pins[k] = pin
	m.stats.Pins++
	return slices.Clone(pin.segs), nil
}

// pinGap registers b, bytes of a buffer that no span holds. Bytes that
// share a page with bytes the buffer shares with an earlier pin (before
// b, after b) go where a real machine has them: in that page, at their
// offset, so a physical discontinuity never falls inside a page. The
// rest get new pages (pinFresh). A gap inside one page between two
// buffers that were pinned apart has no such place, and is refused.
func (m *Memory) pinGap(p *pinning, b []byte, before, after *span) error {
	k, n := keyOf(b), len(b)
	at := func(s *span, key uintptr) kernel.PhysAddr {
		return s.phys + kernel.PhysAddr(key) - kernel.PhysAddr(s.key)
	}
	head, tail := 0, n // b[:head] in before's page, b[tail:] in after's
	if before != nil && k%kernel.PageSize != 0 {
		head = min(n, int(kernel.PageSize-k%kernel.PageSize))
	}
	if after != nil && (k+uintptr(n))%kernel.PageSize != 0 {
		tail = max(0, n-int((k+uintptr(n))%kernel.PageSize))
	}
	if tail < head {
		// One page holds the end of before, all of b and the start of
		// after: they must agree on where it is.
		if at(before, k) != at(after, k) {
			return fmt.Errorf("sim memory: pin of %d bytes joins buffers pinned on different physical pages inside one page: %w", n, kernel.ErrBadAddress)
		}
		tail = head
	}
	if head > 0 {
		m.addPinSpan(p, at(before, k), b[:head:head])
	}
	if head < tail {
		if err := m.pinFresh(p, b[head:tail:tail]); err != nil {
			return err
		}
	}
	if tail < n {
		m.addPinSpan(p, at(after, k+uintptr(tail)), b[tail:])
	}
	return nil
}

// pinFresh registers b on new physical pages at b's offset in its first
// page: one run of them, or with SetScatter a page apart each.
func (m *Memory) pinFresh(p *pinning, b []byte) error {
	off := uint64(keyOf(b) % kernel.PageSize)
	if !m.scatter {
		pages := (off + uint64(len(b)) + kernel.PageSize - 1) / kernel.PageSize
		base, err := m.reserve(pages*kernel.PageSize, kernel.PageSize)
		if err != nil {
			return err
		}
		m.addPinSpan(p, base+kernel.PhysAddr(off), b)
		return nil
	}
	for rest := b; len(rest) > 0; off = 0 {
		base, err := m.reserve(kernel.PageSize, kernel.PageSize)
		if err != nil {
			return err
		}
		n := min(uint64(len(rest)), kernel.PageSize-off)
		m.addPinSpan(p, base+kernel.PhysAddr(off), rest[:n:n])
		rest = rest[n:]
	}
	return nil
}

// part is the range of s's bytes that buf covers.
func (s *span) part(buf []byte) (lo, hi int) {
	k, end := keyOf(buf), keyOf(buf)+uintptr(len(buf))
	lo = int(max(k, s.key) - s.key)
	hi = int(min(end, s.key+uintptr(len(s.cpu))) - s.key)
	return lo, hi
}

// handOver gives s's bytes [lo, hi), pinned again, to the device, with
// what the CPU wrote there, as a map does.
func (m *Memory) handOver(s *span, lo, hi int) {
	copySpan(s, lo, hi-lo, false)
	if m.owning() {
		s.giveDevice(lo, hi)
	}
}

// addSeg appends n bytes at phys to p's segments, extending the last one
// when they follow it.
func (p *pinning) addSeg(phys kernel.PhysAddr, n int) {
	if k := len(p.segs); k > 0 && p.segs[k-1].Phys+kernel.PhysAddr(p.segs[k-1].Len) == phys {
		p.segs[k-1].Len += n
		return
	}
	p.segs = append(p.segs, kernel.Segment{Phys: phys, Len: n})
}

func (m *Memory) addPinSpan(p *pinning, phys kernel.PhysAddr, b []byte) {
	s := &span{phys: phys, cpu: b, key: keyOf(b), pin: true, refs: 1}
	if !m.coherent {
		s.dev = slices.Clone(b)
	}
	m.insert(s)
	p.spans = append(p.spans, s)
	p.addSeg(phys, len(b))
}

// unpinSpans drops p's hold on its spans; a span no pinning holds is
// gone.
func (m *Memory) unpinSpans(p *pinning) {
	for _, s := range p.spans {
		if s.refs--; s.refs == 0 {
			m.remove(s)
		}
	}
}

// Unpin drops one Pin of buf. Device-side data not yet synced for the CPU
// is lost with the last pinning that holds it, as on a non-coherent
// machine.
func (m *Memory) Unpin(buf []byte) error {
	if len(buf) == 0 {
		return fmt.Errorf("sim memory: unpin: %w", kernel.ErrZeroLength)
	}
	k := pinKey{keyOf(buf), len(buf)}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pins[k]
	if !ok {
		return fmt.Errorf("sim memory: unpin of %d bytes never pinned as one buffer: %w", len(buf), kernel.ErrNotMapped)
	}
	m.stats.Unpins++
	if p.refs--; p.refs > 0 {
		return nil
	}
	delete(m.pins, k)
	m.unpinSpans(p)
	return nil
}

// ErrUnregistered is wrapped by device accesses to physical addresses no
// allocation or pin holds.
var ErrUnregistered = errors.New("physical address not registered")

// ErrCPUOwned is wrapped by the misuse a device write to bytes the CPU owns
// records.
var ErrCPUOwned = errors.New("owned by the CPU since SyncForCPU, no SyncForDevice")

// walk calls f for each registered piece of [p, p+n), failing on a gap.
func (m *Memory) walk(p kernel.PhysAddr, n int, f func(s *span, off, n int)) error {
	for n > 0 {
		s := m.find(p)
		if s == nil {
			return fmt.Errorf("sim memory: %#x: %w", p, ErrUnregistered)
		}
		off := int(p - s.phys)
		k := min(n, len(s.cpu)-off)
		f(s, off, k)
		p += kernel.PhysAddr(k)
		n -= k
	}
	return nil
}

// DeviceRead reads physical memory as a device sees it.
func (m *Memory) DeviceRead(p kernel.PhysAddr, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deviceRead(p, b)
}

func (m *Memory) deviceRead(p kernel.PhysAddr, b []byte) error {
	done := 0
	err := m.walk(p, len(b), func(s *span, off, n int) {
		src := s.cpu
		if s.dev != nil {
			src = s.dev
		}
		copy(b[done:done+n], src[off:off+n])
		done += n
	})
	if err != nil {
		return fmt.Errorf("device read of %d bytes at %#x: %w", len(b), p, err)
	}
	return nil
}

// DeviceWrite writes physical memory as a device does.
func (m *Memory) DeviceWrite(p kernel.PhysAddr, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Check the whole range first so a failed write changes nothing.
	if err := m.walk(p, len(b), func(*span, int, int) {}); err != nil {
		return fmt.Errorf("device write of %d bytes at %#x: %w", len(b), p, err)
	}
	done := 0
	owning, misused := m.owning(), false
	return m.walk(p, len(b), func(s *span, off, n int) {
		if owning && len(s.own) != 0 && !misused {
			if at, ok := s.cpuOwned(off, off+n); ok {
				m.misuse(fmt.Errorf("device write to %#x %w (a write of %d bytes at %#x)", s.phys+kernel.PhysAddr(at), ErrCPUOwned, len(b), p))
				misused = true
			}
		}
		dst := s.cpu
		if s.dev != nil {
			dst = s.dev
		}
		copy(dst[off:off+n], b[done:done+n])
		done += n
	})
}

// SyncForCPU makes device writes to [p, p+n) visible in the CPU slices.
func (m *Memory) SyncForCPU(p kernel.PhysAddr, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.SyncsForCPU++
	if err := m.sync(p, n, true); err != nil {
		m.misuse(fmt.Errorf("sync for cpu of %d bytes at %#x: %w", n, p, err))
	}
}

// SyncForDevice makes CPU writes to [p, p+n) visible to devices.
func (m *Memory) SyncForDevice(p kernel.PhysAddr, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.SyncsForDevice++
	if err := m.sync(p, n, false); err != nil {
		m.misuse(fmt.Errorf("sync for device of %d bytes at %#x: %w", n, p, err))
	}
}

func (m *Memory) sync(p kernel.PhysAddr, n int, forCPU bool) error {
	if n <= 0 {
		return kernel.ErrZeroLength
	}
	owning := m.owning()
	// One span holds the range: a frame in its buffer, the usual sync.
	if s := m.find(p); s != nil && p+kernel.PhysAddr(n) <= s.end() {
		syncSpan(s, int(p-s.phys), n, forCPU, owning)
		return nil
	}
	// Check the whole range first so a bad one changes nothing; coherent
	// allocations need nothing more.
	work := false
	if err := m.walk(p, n, func(s *span, _, _ int) { work = work || s.dev != nil || owning && s.pin }); err != nil {
		return err
	}
	if !work {
		return nil
	}
	return m.walk(p, n, func(s *span, off, k int) { syncSpan(s, off, k, forCPU, owning) })
}

// syncSpan syncs s's bytes [off, off+n) and, when the memory tracks
// ownership, hands them to the CPU or back to the device.
func syncSpan(s *span, off, n int, forCPU, owning bool) {
	copySpan(s, off, n, forCPU)
	switch {
	case !owning || !s.pin:
	case forCPU:
		s.takeCPU(off, off+n)
	default:
		s.giveDevice(off, off+n)
	}
}

// after returns the index of the first of s.own ending after x (at or
// after x with touch, for merging).
func (s *span) after(x int, touch bool) int {
	lo, hi := 0, len(s.own)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if e := s.own[mid].hi; e < x || e == x && !touch {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// takeCPU gives [lo, hi) to the CPU, merging it with the ranges it
// overlaps or touches.
func (s *span) takeCPU(lo, hi int) {
	if len(s.own) == 0 { // the usual case: one frame in a buffer
		s.own = append(s.own, ownRange{lo, hi})
		return
	}
	i := s.after(lo, true)
	j := i
	for j < len(s.own) && s.own[j].lo <= hi {
		j++
	}
	if i < j {
		lo, hi = min(lo, s.own[i].lo), max(hi, s.own[j-1].hi)
	}
	s.own = slices.Replace(s.own, i, j, ownRange{lo, hi})
}

// giveDevice hands [lo, hi) back to the device, keeping the parts of the
// ranges it cuts that lie outside it.
func (s *span) giveDevice(lo, hi int) {
	if len(s.own) == 1 && lo <= s.own[0].lo && s.own[0].hi <= hi { // the frame handed back
		s.own = s.own[:0]
		return
	}
	i := s.after(lo, false)
	j := i
	for j < len(s.own) && s.own[j].lo < hi {
		j++
	}
	if i == j {
		return
	}
	var keep [2]ownRange
	k := 0
	if first := s.own[i]; first.lo < lo {
		keep[k] = ownRange{first.lo, lo}
		k++
	}
	if last := s.own[j-1]; last.hi > hi {
		keep[k] = ownRange{hi, last.hi}
		k++
	}
	s.own = slices.Replace(s.own, i, j, keep[:k]...)
}

// cpuOwned returns the first byte of [lo, hi) the CPU owns, if any.
func (s *span) cpuOwned(lo, hi int) (int, bool) {
	if i := s.after(lo, false); i < len(s.own) && s.own[i].lo < hi {
		return max(s.own[i].lo, lo), true
	}
	return 0, false
}

// copySpan moves s's bytes [off, off+n) from the device's view to the
// CPU's or back; a coherent span has one view and nothing to move.
func copySpan(s *span, off, n int, forCPU bool) {
	switch {
	case s.dev == nil:
	case forCPU:
		copy(s.cpu[off:off+n], s.dev[off:off+n])
	default:
		copy(s.dev[off:off+n], s.cpu[off:off+n])
	}
}

// FlushCache writes buf's cache lines back for the non-snooping table
// walker. buf must lie in registered memory.
func (m *Memory) FlushCache(buf []byte) {
	if len(buf) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Flushes++
	key := keyOf(buf)
	for rest := len(buf); rest > 0; {
		s := m.findCPU(key)
		if s == nil {
			m.misuse(fmt.Errorf("flush of %d bytes: buffer not in registered memory: %w", len(buf), ErrUnregistered))
			return
		}
		off := int(key - s.key)
		n := min(rest, len(s.cpu)-off)
		if m.tracking {
			m.writeBack(s, off, n)
		}
		key += uintptr(n)
		rest -= n
	}
}

// writeBack copies the cache lines covering s.cpu[off:off+n] into the
// walker's view.
func (m *Memory) writeBack(s *span, off, n int) {
	lo := (s.phys + kernel.PhysAddr(off)) &^ (lineSize - 1)
	hi := (s.phys + kernel.PhysAddr(off+n) + lineSize - 1) &^ (lineSize - 1)
	lo = max(lo, s.phys)
	hi = min(hi, s.end())
	for p := lo; p < hi; {
		page := p &^ (kernel.PageSize - 1)
		snap := m.flushed[page]
		if snap == nil {
			snap = new([kernel.PageSize]byte)
			m.flushed[page] = snap
		}
		k := min(hi, page+kernel.PageSize) - p
		copy(snap[p-page:p-page+k], s.cpu[p-s.phys:p-s.phys+k])
		p += k
	}
}

// TableView returns the memory a VT-d unit walks its tables in: the device
// view, or with flush tracking on, what FlushCache wrote back.
func (m *Memory) TableView() vtd.Memory { return tableView{m} }

type tableView struct{ m *Memory }

func (v tableView) DeviceRead(p kernel.PhysAddr, b []byte) error {
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.tracking {
		return m.deviceRead(p, b)
	}
	done := 0
	err := m.walk(p, len(b), func(s *span, off, n int) {
		for n > 0 {
			q := s.phys + kernel.PhysAddr(off)
			page := q &^ (kernel.PageSize - 1)
			k := min(n, int(page+kernel.PageSize-q))
			if snap := m.flushed[page]; snap != nil {
				copy(b[done:done+k], snap[q-page:])
			} else {
				clear(b[done : done+k])
			}
			done, off, n = done+k, off+k, n-k
		}
	})
	if err != nil {
		return fmt.Errorf("table read of %d bytes at %#x: %w", len(b), p, err)
	}
	return nil
}
