package iommu

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// Domain is one device's address space: its own page table, IOVA space and
// domain id. It implements kernel.DMA.
type Domain struct {
	u      *Unit
	id     uint16
	source uint16
	pt     *pageTable
	iova   *iovaSpace
	live   liveMaps          // changed under the unit's lock; syncs read it without
	holes  map[uint64]uint64 // reserved, never-mapped IOVA ranges: start to size
	faults uint64            // fault records read for this source
}

var _ kernel.DMA = (*Domain)(nil)

// ID returns the domain id written in the device's context entry.
func (d *Domain) ID() uint16 { return d.id }

// Source returns the device's source id.
func (d *Domain) Source() uint16 { return d.source }

func (d *Domain) errorf(format string, args ...any) error {
	return fmt.Errorf("iommu %s: "+format, append([]any{SourceString(d.source)}, args...)...)
}

func validDir(dir kernel.Direction) bool {
	return dir == kernel.ToDevice || dir == kernel.FromDevice || dir == kernel.Bidirectional
}

// perm returns the leaf permissions for a direction. A device reads a
// ToDevice buffer and writes a FromDevice one; units without ZLR may issue
// zero-length reads to any buffer, so those get read permission too.
func (u *Unit) perm(dir kernel.Direction) uint64 {
	var p uint64
	if dir&kernel.ToDevice != 0 || !u.caps.ZLR {
		p |= pteRead
	}
	if dir&kernel.FromDevice != 0 {
		p |= pteWrite
	}
	return p
}

// Map pins buf and maps it, in one contiguous IOVA range, for the device.
// The returned address keeps buf's offset within its first page.
func (d *Domain) Map(buf []byte, dir kernel.Direction) (kernel.DMAAddr, error) {
	if len(buf) == 0 {
		return 0, d.errorf("map: %w", kernel.ErrZeroLength)
	}
	if !validDir(dir) {
		return 0, d.errorf("map: direction %d: %w", dir, kernel.ErrBadAddress)
	}
	mem := d.u.tm.mem
	segs, err := mem.Pin(buf)
	if err != nil {
		return 0, d.errorf("map %d bytes: pin: %w", len(buf), err)
	}
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	m, addr, err := d.mapSegments(segs, len(buf), dir)
	if err != nil {
		if uerr := mem.Unpin(buf); uerr != nil {
			err = fmt.Errorf("%w (unpin: %v)", err, uerr)
		}
		return 0, d.errorf("map %d bytes: %w", len(buf), err)
	}
	m.buf = buf
	d.track(m)
	return addr, nil
}

// mapSegments maps the physical segments of a size-byte buffer at a fresh
// IOVA range. On error nothing stays mapped or allocated.
func (d *Domain) mapSegments(segs []kernel.Segment, size int, dir kernel.Direction) (*mapping, kernel.DMAAddr, error) {
	if err := checkSegments(segs, size); err != nil {
		return nil, 0, err
	}
	first := uint64(segs[0].Phys)
	off := first & (kernel.PageSize - 1)
	span := pageUp(off + uint64(size))
	align, phase := uint64(kernel.PageSize), uint64(0)
	if d.pt.large && span >= largeSize {
		// Same offset within 2 MiB as the physical start, so aligned
		// physical stretches land on aligned IOVAs and take 2 MiB leaves.
		align, phase = largeSize, (first-off)&(largeSize-1)
	}
	iova, err := d.iova.alloc(span, align, phase)
	if err != nil && align != kernel.PageSize {
		iova, err = d.iova.alloc(span, kernel.PageSize, 0) // fragmented: do without large leaves
	}
	if err != nil {
		return nil, 0, err
	}
	if err := d.mapAt(iova, span, segs, d.u.perm(dir)); err != nil {
		return nil, 0, err
	}
	d.u.stats.Maps++
	addr := kernel.DMAAddr(iova + off)
	return &mapping{addr: addr, iova: iova, span: span, size: size, dir: dir, segs: segs}, addr, nil
}

// mapAt maps segs back to back at [iova, iova+span), which the caller
// took from the IOVA allocator, with permissions perm, and makes the
// unit see the new leaves. On error nothing stays mapped, and the range
// goes back to the allocator unless the unit may have cached it.
func (d *Domain) mapAt(iova, span uint64, segs []kernel.Segment, perm uint64) error {
	va := iova
	defer func() {
		if len(d.pt.replaced) > 0 {
			d.freeReplaced(iova, span)
		}
	}()
	for _, s := range segs {
		pa := uint64(s.Phys) &^ (kernel.PageSize - 1)
		n := pageUp(uint64(s.Phys)+uint64(s.Len)) - pa
		if err := d.pt.mapRun(va, pa, n, perm); err != nil {
			if va > iova {
				if _, uerr := d.pt.unmapRange(iova, va-iova); uerr != nil {
					return fmt.Errorf("%w (rollback: %v)", err, uerr)
				}
				// The leaves were briefly present: drop anything the
				// unit cached before the IOVA goes back.
				if d.u.enabled {
					if ierr := d.u.inv.rangeInvalidate(d, iova, va-iova); ierr != nil {
						return fmt.Errorf("%w (invalidate: %v)", err, ierr)
					}
				}
			}
			if rerr := d.iova.release(iova, span); rerr != nil {
				err = fmt.Errorf("%w (iova: %v)", err, rerr)
			}
			return err
		}
		va += n
	}
	if err := d.u.inv.newMapping(d, iova, span); err != nil {
		_, _ = d.pt.unmapRange(iova, span)
		return err // the IOVA stays reserved: it may be cached
	}
	return nil
}

// freeReplaced drops any directory entry the unit may cache for the level-1
// tables that 2 MiB leaves replaced in [iova, iova+span), then frees them.
// If the invalidation fails the tables are leaked, never reused: a stale
// entry could still point at them.
func (d *Domain) freeReplaced(iova, span uint64) {
	if d.u.enabled {
		if err := d.u.inv.rangeInvalidate(d, iova, span); err != nil {
			d.pt.replaced = d.pt.replaced[:0]
			return
		}
	}
	_ = d.pt.freeReplaced()
}

// checkSegments verifies that the segments can sit back to back in one
// IOVA range: only the first may start, and only the last may end, inside
// a page.
func checkSegments(segs []kernel.Segment, size int) error {
	if len(segs) == 0 {
		return fmt.Errorf("no segments: %w", kernel.ErrBadAddress)
	}
	total := 0
	for i, s := range segs {
		if s.Len <= 0 {
			return fmt.Errorf("segment %d of length %d: %w", i, s.Len, kernel.ErrBadAddress)
		}
		if i > 0 && s.Phys&(kernel.PageSize-1) != 0 {
			return fmt.Errorf("segment %d starts at %#x inside a page: %w", i, s.Phys, kernel.ErrUnaligned)
		}
		if end := uint64(s.Phys) + uint64(s.Len); end > addrMask+kernel.PageSize || end < uint64(s.Phys) {
			return fmt.Errorf("segment %d at %#x+%d: beyond the 52 address bits an entry holds: %w", i, s.Phys, s.Len, kernel.ErrBadAddress)
		}
		if i < len(segs)-1 && (uint64(s.Phys)+uint64(s.Len))&(kernel.PageSize-1) != 0 {
			return fmt.Errorf("segment %d ends at %#x inside a page: %w", i, uint64(s.Phys)+uint64(s.Len), kernel.ErrUnaligned)
		}
		total += s.Len
	}
	if total != size {
		return fmt.Errorf("segments cover %d bytes of %d: %w", total, size, kernel.ErrBadAddress)
	}
	return nil
}

func pageUp(n uint64) uint64 { return (n + kernel.PageSize - 1) &^ (kernel.PageSize - 1) }

// Unmap removes a mapping made by Map. addr and size must be exactly what
// Map took and returned.
func (d *Domain) Unmap(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	m, err := d.lookup(addr, size, dir)
	if err != nil {
		return d.errorf("unmap %#x: %w", addr, err)
	}
	if m.region != nil {
		return d.errorf("unmap %#x: coherent allocation, use FreeCoherent: %w", addr, kernel.ErrBadAddress)
	}
	if err := d.unmap(addr, m); err != nil {
		return d.errorf("unmap %#x: %w", addr, err)
	}
	return nil
}

func (d *Domain) lookup(addr kernel.DMAAddr, size int, dir kernel.Direction) (*mapping, error) {
	m := d.live.exact(addr)
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

// unmap clears the leaves and hands the range to the invalidation policy.
func (d *Domain) unmap(addr kernel.DMAAddr, m *mapping) error {
	d.untrack(m)
	d.u.stats.Unmaps++
	_, err := d.pt.unmapRange(m.iova, m.span)
	if err != nil {
		// Tables disagree with our records; the IOVA stays reserved.
		return fmt.Errorf("page table: %w", err)
	}
	return d.u.inv.retire(retired{d: d, iova: m.iova, size: m.span, buf: m.buf, region: m.region})
}

// AllocCoherent allocates size bytes of pinned memory and maps them for the
// device for read and write, for descriptor rings.
func (d *Domain) AllocCoherent(size int) (kernel.Coherent, error) {
	if size <= 0 {
		return kernel.Coherent{}, d.errorf("alloc coherent %d bytes: %w", size, kernel.ErrZeroLength)
	}
	mem := d.u.tm.mem
	n := int(pageUp(uint64(size)))
	align := kernel.PageSize
	if d.pt.large && n >= largeSize {
		align = largeSize // so the mapping can use 2 MiB leaves
	}
	r, err := mem.Alloc(n, align)
	if err != nil {
		return kernel.Coherent{}, d.errorf("alloc coherent %d bytes: %w", size, err)
	}
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	m, addr, err := d.mapSegments([]kernel.Segment{{Phys: r.Phys, Len: n}}, n, kernel.Bidirectional)
	if err != nil {
		if ferr := mem.Free(r); ferr != nil {
			err = fmt.Errorf("%w (free: %v)", err, ferr)
		}
		return kernel.Coherent{}, d.errorf("alloc coherent %d bytes: %w", size, err)
	}
	m.size = size
	m.region = &r
	d.track(m)
	return kernel.Coherent{Buf: r.Buf[:size:size], Addr: addr}, nil
}

// FreeCoherent unmaps and frees an allocation from AllocCoherent.
func (d *Domain) FreeCoherent(c kernel.Coherent) error {
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	m, err := d.lookup(c.Addr, len(c.Buf), kernel.Bidirectional)
	if err == nil && m.region == nil {
		err = fmt.Errorf("streaming mapping, use Unmap: %w", kernel.ErrBadAddress)
	}
	if err != nil {
		return d.errorf("free coherent %#x: %w", c.Addr, err)
	}
	if err := d.unmap(c.Addr, m); err != nil {
		return d.errorf("free coherent %#x: %w", c.Addr, err)
	}
	return nil
}

// SyncForCPU makes the device's writes to [addr, addr+size) visible to the
// CPU. The range may be any part of one live mapping. It takes neither the
// unit's lock nor a walk of the tables: the mapping keeps the physical
// segments it was made with.
func (d *Domain) SyncForCPU(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	if err := d.u.sync.sync(&d.live, addr, size, dir, true); err != nil {
		return d.errorf("sync for cpu %#x+%d: %w", addr, size, err)
	}
	return nil
}

// SyncForDevice makes the CPU's writes to [addr, addr+size) visible to the
// device.
func (d *Domain) SyncForDevice(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	if err := d.u.sync.sync(&d.live, addr, size, dir, false); err != nil {
		return d.errorf("sync for device %#x+%d: %w", addr, size, err)
	}
	return nil
}

// track records a new mapping; untrack forgets it. Both run under the
// unit's lock.
func (d *Domain) track(m *mapping)   { d.live.add(m) }
func (d *Domain) untrack(m *mapping) { d.live.remove(m) }

// Translate returns the physical address the domain's tables give iova, as
// the unit would see it; ok is false for an unmapped IOVA.
func (d *Domain) Translate(iova kernel.DMAAddr) (kernel.PhysAddr, bool) {
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	pa, _, _, ok := d.pt.lookup(uint64(iova))
	return pa, ok
}
