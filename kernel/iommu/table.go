package iommu

import (
	"encoding/binary"
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// tableMem allocates table pages and publishes entry writes to a unit that
// may not snoop the CPU caches (ECAP.C=0).
type tableMem struct {
	mem   kernel.Memory
	flush bool  // ECAP.C=0: flush every table write from the CPU caches
	pages int64 // table pages allocated
}

// page allocates a zeroed table page and makes the zeroes visible to the
// unit before anything links to it.
func (tm *tableMem) page() (kernel.Region, error) {
	r, err := tm.mem.Alloc(kernel.PageSize, kernel.PageSize)
	if err != nil {
		return kernel.Region{}, fmt.Errorf("table page: %w", err)
	}
	if r.Phys&(kernel.PageSize-1) != 0 || len(r.Buf) < kernel.PageSize {
		_ = tm.mem.Free(r)
		return kernel.Region{}, fmt.Errorf("table page at %#x, %d bytes: %w", r.Phys, len(r.Buf), kernel.ErrUnaligned)
	}
	if tm.flush {
		tm.mem.FlushCache(r.Buf)
	}
	tm.pages++
	return r, nil
}

func (tm *tableMem) free(r kernel.Region) error {
	if err := tm.mem.Free(r); err != nil {
		return fmt.Errorf("table page %#x: %w", r.Phys, err)
	}
	tm.pages--
	return nil
}

// put stores one 64-bit entry with a single store and flushes it.
func (tm *tableMem) put(buf []byte, off int, v uint64) {
	b := buf[off : off+8]
	binary.LittleEndian.PutUint64(b, v)
	if tm.flush {
		tm.mem.FlushCache(b)
	}
}

func get(buf []byte, off int) uint64 { return binary.LittleEndian.Uint64(buf[off : off+8]) }

// table is one page of a second-level page table and the Go-side pointers
// to its children, so walks never turn physical addresses into pointers.
type table struct {
	mem   kernel.Region
	child [tableEntries]*table
	used  int // present entries
}

func (t *table) entry(i int) uint64 { return get(t.mem.Buf, i*entrySize) }

// pageTable is a domain's second-level translation: levels 3 (39-bit) or 4
// (48-bit), 4 KiB leaves at level 1, 2 MiB leaves at level 2.
type pageTable struct {
	tm     *tableMem
	levels int
	root   *table
	large  bool  // 2 MiB leaves allowed
	mapped int64 // 4 KiB pages translated
	// replaced holds empty level-1 tables that a 2 MiB leaf took the
	// place of. The unit may still cache the old directory entry, so they
	// are freed only after an invalidation of their range.
	replaced []*table
}

func newPageTable(tm *tableMem, levels int, large bool) (*pageTable, error) {
	r, err := tm.page()
	if err != nil {
		return nil, err
	}
	return &pageTable{tm: tm, levels: levels, root: &table{mem: r}, large: large}, nil
}

func levelShift(level int) uint { return pageShift + uint(level-1)*levelStride }

func index(iova uint64, level int) int { return int(iova>>levelShift(level)) & (tableEntries - 1) }

// descend returns the table at level `to` that covers iova, creating the
// tables in between when create is set. It returns nil, nil when a table
// is missing and create is off.
func (pt *pageTable) descend(iova uint64, to int, create bool) (*table, error) {
	t := pt.root
	for level := pt.levels; level > to; level-- {
		i := index(iova, level)
		e := t.entry(i)
		if e&pteLarge != 0 {
			return nil, fmt.Errorf("iova %#x: level %d entry %d is a large leaf", iova, level, i)
		}
		next := t.child[i]
		if next == nil {
			if !create {
				return nil, nil
			}
			r, err := pt.tm.page()
			if err != nil {
				return nil, fmt.Errorf("iova %#x level %d: %w", iova, level-1, err)
			}
			next = &table{mem: r}
			t.child[i] = next
			t.used++
			// Non-leaf entries grant read and write; leaves decide.
			pt.tm.put(t.mem.Buf, i*entrySize, uint64(r.Phys)&addrMask|pteRead|pteWrite)
		}
		t = next
	}
	return t, nil
}

// mapRun maps the physically contiguous run [phys, phys+size) at iova with
// permission bits perm. All three are page multiples. On error nothing of
// the run stays mapped.
func (pt *pageTable) mapRun(iova, phys, size, perm uint64) error {
	done := uint64(0)
	for done < size {
		va, pa, left := iova+done, phys+done, size-done
		step, err := pt.mapOne(va, pa, left, perm)
		if err != nil {
			if done > 0 {
				if _, uerr := pt.unmapRange(iova, done); uerr != nil {
					err = fmt.Errorf("%w (rollback: %v)", err, uerr)
				}
			}
			return err
		}
		done += step
	}
	return nil
}

// mapOne writes one leaf at va: a 2 MiB leaf where the unit allows it, both
// addresses are 2 MiB aligned, the run has 2 MiB left and no 4 KiB table
// sits in the slot; a 4 KiB leaf otherwise. It returns the bytes mapped.
func (pt *pageTable) mapOne(va, pa, left, perm uint64) (uint64, error) {
	if pt.large && va%largeSize == 0 && pa%largeSize == 0 && left >= largeSize {
		t, err := pt.descend(va, 2, true)
		if err != nil {
			return 0, err
		}
		i := index(va, 2)
		switch old := t.child[i]; {
		case old == nil:
			if e := t.entry(i); e != 0 {
				return 0, fmt.Errorf("iova %#x already mapped (entry %#x)", va, e)
			}
			pt.tm.put(t.mem.Buf, i*entrySize, pa&addrMask|pteLarge|perm)
			t.used++
			pt.mapped += largeSize / kernel.PageSize
			return largeSize, nil
		case old.used == 0:
			// An empty table left by earlier 4 KiB mappings: the leaf
			// replaces the directory entry in one store.
			pt.tm.put(t.mem.Buf, i*entrySize, pa&addrMask|pteLarge|perm)
			t.child[i] = nil
			pt.replaced = append(pt.replaced, old)
			pt.mapped += largeSize / kernel.PageSize
			return largeSize, nil
		}
	}
	t, err := pt.descend(va, 1, true)
	if err != nil {
		return 0, err
	}
	i := index(va, 1)
	if e := t.entry(i); e != 0 {
		return 0, fmt.Errorf("iova %#x already mapped (entry %#x)", va, e)
	}
	pt.tm.put(t.mem.Buf, i*entrySize, pa&addrMask|perm)
	t.used++
	pt.mapped++
	return kernel.PageSize, nil
}

// unmapRange clears every leaf in [iova, iova+size) and returns how many
// bytes were translated. A hole or a large leaf that straddles the range
// is reported, but everything else in the range is still cleared.
func (pt *pageTable) unmapRange(iova, size uint64) (uint64, error) {
	var cleared uint64
	var firstErr error
	note := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	end := iova + size
	for va := iova; va < end; {
		t, err := pt.descend(va, 2, false)
		if err != nil {
			note(err)
			va += kernel.PageSize
			continue
		}
		if t == nil {
			note(fmt.Errorf("iova %#x: no table: %w", va, kernel.ErrNotMapped))
			va = (va | (1<<levelShift(3) - 1)) + 1
			continue
		}
		i := index(va, 2)
		if e := t.entry(i); e&pteLarge != 0 {
			if va%largeSize != 0 || end-va < largeSize {
				note(fmt.Errorf("iova %#x: 2 MiB leaf straddles [%#x, %#x)", va, iova, end))
				va = (va | (largeSize - 1)) + 1
				continue
			}
			pt.tm.put(t.mem.Buf, i*entrySize, 0)
			t.used--
			pt.mapped -= largeSize / kernel.PageSize
			cleared += largeSize
			va += largeSize
			continue
		}
		l1 := t.child[i]
		if l1 == nil {
			note(fmt.Errorf("iova %#x: no table: %w", va, kernel.ErrNotMapped))
			va = (va | (largeSize - 1)) + 1
			continue
		}
		j := index(va, 1)
		if l1.entry(j) == 0 {
			note(fmt.Errorf("iova %#x: %w", va, kernel.ErrNotMapped))
		} else {
			pt.tm.put(l1.mem.Buf, j*entrySize, 0)
			l1.used--
			pt.mapped--
			cleared += kernel.PageSize
		}
		va += kernel.PageSize
	}
	return cleared, firstErr
}

// lookup translates iova through the tables the way the unit does and
// returns the physical address, the leaf's permission bits and how many
// bytes from iova the same leaf still covers.
func (pt *pageTable) lookup(iova uint64) (phys kernel.PhysAddr, perm uint64, left uint64, ok bool) {
	t := pt.root
	for level := pt.levels; level >= 1; level-- {
		e := t.entry(index(iova, level))
		if e&(pteRead|pteWrite) == 0 {
			return 0, 0, 0, false
		}
		if level == 1 || e&pteLarge != 0 {
			sz := uint64(1) << levelShift(level)
			off := iova & (sz - 1)
			return kernel.PhysAddr(e&addrMask&^(sz-1) + off), e & (pteRead | pteWrite), sz - off, true
		}
		t = t.child[index(iova, level)]
		if t == nil {
			return 0, 0, 0, false
		}
	}
	return 0, 0, 0, false
}

// freeReplaced frees the tables 2 MiB leaves replaced. Call it only after
// an invalidation that covers their ranges.
func (pt *pageTable) freeReplaced() error {
	var firstErr error
	for _, t := range pt.replaced {
		if err := pt.tm.free(t.mem); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	pt.replaced = pt.replaced[:0]
	return firstErr
}

// release frees every table page below and including the root.
func (pt *pageTable) release() error {
	var firstErr error
	var walk func(t *table)
	walk = func(t *table) {
		for _, c := range t.child {
			if c != nil {
				walk(c)
			}
		}
		if err := pt.tm.free(t.mem); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	walk(pt.root)
	pt.root = nil
	return firstErr
}
