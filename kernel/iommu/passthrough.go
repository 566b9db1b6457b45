package iommu

import (
	"fmt"
	"sort"
	"sync"

	"github.com/ether9/ether9/kernel"
)

// passthrough is kernel.DMA with translation off: a DMA address is the
// physical address, so a mapping must be physically contiguous.
type passthrough struct {
	mem  kernel.Memory
	mu   sync.Mutex
	maps []ptMap // sorted by addr, non-overlapping
}

type ptMap struct {
	addr   uint64
	size   int
	dir    kernel.Direction
	buf    []byte
	region *kernel.Region
}

// Passthrough returns the DMA view of a device when no IOMMU translates:
// Map pins and returns the physical address.
func Passthrough(mem kernel.Memory) kernel.DMA { return &passthrough{mem: mem} }

func (p *passthrough) AllocCoherent(size int) (kernel.Coherent, error) {
	if size <= 0 {
		return kernel.Coherent{}, fmt.Errorf("passthrough: alloc coherent %d bytes: %w", size, kernel.ErrZeroLength)
	}
	r, err := p.mem.Alloc(int(pageUp(uint64(size))), kernel.PageSize)
	if err != nil {
		return kernel.Coherent{}, fmt.Errorf("passthrough: alloc coherent %d bytes: %w", size, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.insert(ptMap{addr: uint64(r.Phys), size: size, dir: kernel.Bidirectional, region: &r}); err != nil {
		_ = p.mem.Free(r)
		return kernel.Coherent{}, fmt.Errorf("passthrough: alloc coherent: %w", err)
	}
	return kernel.Coherent{Buf: r.Buf[:size:size], Addr: kernel.DMAAddr(r.Phys)}, nil
}

func (p *passthrough) FreeCoherent(c kernel.Coherent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, err := p.find(c.Addr, len(c.Buf), kernel.Bidirectional)
	if err == nil && p.maps[i].region == nil {
		err = fmt.Errorf("streaming mapping, use Unmap: %w", kernel.ErrBadAddress)
	}
	if err != nil {
		return fmt.Errorf("passthrough: free coherent %#x: %w", c.Addr, err)
	}
	r := *p.maps[i].region
	p.maps = append(p.maps[:i], p.maps[i+1:]...)
	if err := p.mem.Free(r); err != nil {
		return fmt.Errorf("passthrough: free coherent %#x: %w", c.Addr, err)
	}
	return nil
}

func (p *passthrough) Map(buf []byte, dir kernel.Direction) (kernel.DMAAddr, error) {
	if len(buf) == 0 {
		return 0, fmt.Errorf("passthrough: map: %w", kernel.ErrZeroLength)
	}
	if !validDir(dir) {
		return 0, fmt.Errorf("passthrough: map: direction %d: %w", dir, kernel.ErrBadAddress)
	}
	segs, err := p.mem.Pin(buf)
	if err != nil {
		return 0, fmt.Errorf("passthrough: map %d bytes: pin: %w", len(buf), err)
	}
	fail := func(err error) (kernel.DMAAddr, error) {
		if uerr := p.mem.Unpin(buf); uerr != nil {
			err = fmt.Errorf("%w (unpin: %v)", err, uerr)
		}
		return 0, fmt.Errorf("passthrough: map %d bytes: %w", len(buf), err)
	}
	if err := checkSegments(segs, len(buf)); err != nil {
		return fail(err)
	}
	for i := 1; i < len(segs); i++ {
		if end := segs[i-1].Phys + kernel.PhysAddr(segs[i-1].Len); segs[i].Phys != end {
			return fail(fmt.Errorf("physical pages not contiguous (%#x follows %#x) and translation is off: %w",
				segs[i].Phys, end, kernel.ErrBadAddress))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.insert(ptMap{addr: uint64(segs[0].Phys), size: len(buf), dir: dir, buf: buf}); err != nil {
		return fail(err)
	}
	return kernel.DMAAddr(segs[0].Phys), nil
}

func (p *passthrough) Unmap(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, err := p.find(addr, size, dir)
	if err == nil && p.maps[i].region != nil {
		err = fmt.Errorf("coherent allocation, use FreeCoherent: %w", kernel.ErrBadAddress)
	}
	if err != nil {
		return fmt.Errorf("passthrough: unmap %#x: %w", addr, err)
	}
	buf := p.maps[i].buf
	p.maps = append(p.maps[:i], p.maps[i+1:]...)
	if err := p.mem.Unpin(buf); err != nil {
		return fmt.Errorf("passthrough: unmap %#x: unpin: %w", addr, err)
	}
	return nil
}

func (p *passthrough) SyncForCPU(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	return p.sync(addr, size, dir, p.mem.SyncForCPU, "sync for cpu")
}

func (p *passthrough) SyncForDevice(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	return p.sync(addr, size, dir, p.mem.SyncForDevice, "sync for device")
}

func (p *passthrough) sync(addr kernel.DMAAddr, size int, dir kernel.Direction, do func(kernel.PhysAddr, int), what string) error {
	if size <= 0 {
		return fmt.Errorf("passthrough: %s %#x: %w", what, addr, kernel.ErrZeroLength)
	}
	if !validDir(dir) {
		return fmt.Errorf("passthrough: %s %#x: direction %d: %w", what, addr, dir, kernel.ErrBadAddress)
	}
	p.mu.Lock()
	// The last mapping starting at or below addr: searched by hand, as
	// every sync of every buffer comes here.
	lo, hi := 0, len(p.maps)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if p.maps[mid].addr <= uint64(addr) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	inside := lo > 0 && uint64(addr)+uint64(size) <= p.maps[lo-1].addr+uint64(p.maps[lo-1].size)
	p.mu.Unlock()
	if !inside {
		return fmt.Errorf("passthrough: %s %#x+%d: %w", what, addr, size, kernel.ErrNotMapped)
	}
	do(kernel.PhysAddr(addr), size)
	return nil
}

// insert adds m in address order; overlapping a live mapping means the
// platform pinned the same memory twice, which the API does not allow.
func (p *passthrough) insert(m ptMap) error {
	i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].addr >= m.addr })
	if (i > 0 && p.maps[i-1].addr+uint64(p.maps[i-1].size) > m.addr) ||
		(i < len(p.maps) && m.addr+uint64(m.size) > p.maps[i].addr) {
		return fmt.Errorf("[%#x, +%d) overlaps a live mapping: %w", m.addr, m.size, kernel.ErrBadAddress)
	}
	p.maps = append(p.maps, ptMap{})
	copy(p.maps[i+1:], p.maps[i:])
	p.maps[i] = m
	return nil
}

func (p *passthrough) find(addr kernel.DMAAddr, size int, dir kernel.Direction) (int, error) {
	i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].addr >= uint64(addr) })
	if i == len(p.maps) || p.maps[i].addr != uint64(addr) {
		return 0, kernel.ErrNotMapped
	}
	m := p.maps[i]
	if size != m.size {
		return 0, fmt.Errorf("size %d, mapped %d: %w", size, m.size, kernel.ErrBadAddress)
	}
	if dir != m.dir {
		return 0, fmt.Errorf("direction %v, mapped %v: %w", dir, m.dir, kernel.ErrBadAddress)
	}
	return i, nil
}
