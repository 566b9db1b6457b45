package iommu

import (
	"fmt"
	"sync"

	"github.com/ether9/ether9/kernel"
)

// passthrough is kernel.DMA with translation off: a DMA address is the
// physical address, so a mapping must be physically contiguous.
type passthrough struct {
	mem  kernel.Memory
	sync syncer
	mu   sync.Mutex // serialises changes to live; syncs do not take it
	live liveMaps
}

// Passthrough returns the DMA view of a device when no IOMMU translates:
// Map pins and returns the physical address.
func Passthrough(mem kernel.Memory) kernel.DMA { return &passthrough{mem: mem, sync: newSyncer(mem)} }

func (p *passthrough) AllocCoherent(size int) (kernel.Coherent, error) {
	if size <= 0 {
		return kernel.Coherent{}, fmt.Errorf("passthrough: alloc coherent %d bytes: %w", size, kernel.ErrZeroLength)
	}
	n := int(pageUp(uint64(size)))
	r, err := p.mem.Alloc(n, kernel.PageSize)
	if err != nil {
		return kernel.Coherent{}, fmt.Errorf("passthrough: alloc coherent %d bytes: %w", size, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := &mapping{addr: kernel.DMAAddr(r.Phys), size: size, dir: kernel.Bidirectional,
		segs: []kernel.Segment{{Phys: r.Phys, Len: n}}, region: &r}
	if err := p.insert(m); err != nil {
		if ferr := p.mem.Free(r); ferr != nil {
			err = fmt.Errorf("%w (free: %v)", err, ferr)
		}
		return kernel.Coherent{}, fmt.Errorf("passthrough: alloc coherent: %w", err)
	}
	return kernel.Coherent{Buf: r.Buf[:size:size], Addr: m.addr}, nil
}

func (p *passthrough) FreeCoherent(c kernel.Coherent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.find(c.Addr, len(c.Buf), kernel.Bidirectional)
	if err == nil && m.region == nil {
		err = fmt.Errorf("streaming mapping, use Unmap: %w", kernel.ErrBadAddress)
	}
	if err != nil {
		return fmt.Errorf("passthrough: free coherent %#x: %w", c.Addr, err)
	}
	p.live.remove(m)
	if err := p.mem.Free(*m.region); err != nil {
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
	m := &mapping{addr: kernel.DMAAddr(segs[0].Phys), size: len(buf), dir: dir,
		segs: []kernel.Segment{{Phys: segs[0].Phys, Len: len(buf)}}, buf: buf}
	if err := p.insert(m); err != nil {
		return fail(err)
	}
	return m.addr, nil
}

func (p *passthrough) Unmap(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.find(addr, size, dir)
	if err == nil && m.region != nil {
		err = fmt.Errorf("coherent allocation, use FreeCoherent: %w", kernel.ErrBadAddress)
	}
	if err != nil {
		return fmt.Errorf("passthrough: unmap %#x: %w", addr, err)
	}
	p.live.remove(m)
	if err := p.mem.Unpin(m.buf); err != nil {
		return fmt.Errorf("passthrough: unmap %#x: unpin: %w", addr, err)
	}
	return nil
}

// SyncForCPU and SyncForDevice check the range against its mapping, and
// sync it unless the memory is coherent, without p's lock.
func (p *passthrough) SyncForCPU(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	if err := p.sync.sync(&p.live, addr, size, dir, true); err != nil {
		return fmt.Errorf("passthrough: sync for cpu %#x+%d: %w", addr, size, err)
	}
	return nil
}

func (p *passthrough) SyncForDevice(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	if err := p.sync.sync(&p.live, addr, size, dir, false); err != nil {
		return fmt.Errorf("passthrough: sync for device %#x+%d: %w", addr, size, err)
	}
	return nil
}

// insert indexes m; overlapping a live mapping means the platform pinned
// the same memory twice, which the API does not allow.
func (p *passthrough) insert(m *mapping) error {
	if p.live.overlaps(m.addr, m.size) {
		return fmt.Errorf("[%#x, +%d) overlaps a live mapping: %w", m.addr, m.size, kernel.ErrBadAddress)
	}
	p.live.add(m)
	return nil
}

func (p *passthrough) find(addr kernel.DMAAddr, size int, dir kernel.Direction) (*mapping, error) {
	m := p.live.exact(addr)
	if m == nil {
		return nil, kernel.ErrNotMapped
	}
	if size != m.size {
		return nil, fmt.Errorf("size %d, mapped %d: %w", size, m.size, kernel.ErrBadAddress)
	}
	if dir != m.dir {
		return nil, fmt.Errorf("direction %v, mapped %v: %w", dir, m.dir, kernel.ErrBadAddress)
	}
	return m, nil
}
