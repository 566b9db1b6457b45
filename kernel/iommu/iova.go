package iommu

import (
	"fmt"
	"sort"

	"github.com/ether9/ether9/kernel"
)

// span is a half-open IOVA range [start, end).
type span struct{ start, end uint64 }

// iovaSpace allocates IOVA ranges first-fit from a sorted list of free
// spans, merging neighbours on free.
type iovaSpace struct {
	base, limit uint64
	free        []span // sorted by start, never adjacent, never empty
	used        uint64 // bytes allocated
}

func newIOVASpace(base, limit uint64) *iovaSpace {
	return &iovaSpace{base: base, limit: limit, free: []span{{base, limit}}}
}

// alloc returns the lowest start s with s%align == phase whose [s, s+size)
// is free. size, align and phase are page multiples; align is a power of
// two and phase < align.
func (a *iovaSpace) alloc(size, align, phase uint64) (uint64, error) {
	if size == 0 || align == 0 || align&(align-1) != 0 || phase >= align {
		return 0, fmt.Errorf("iova alloc size %#x align %#x phase %#x: %w", size, align, phase, kernel.ErrBadAddress)
	}
	for i, f := range a.free {
		s := f.start + (phase-f.start)&(align-1)
		if s < f.start || s+size < s || s+size > f.end {
			continue
		}
		a.take(i, s, s+size)
		a.used += size
		return s, nil
	}
	return 0, fmt.Errorf("iova alloc of %#x bytes (%#x in use of %#x): %w",
		size, a.used, a.limit-a.base, kernel.ErrNoIOVASpace)
}

// reserve takes the fixed range [s, e), which must be free.
func (a *iovaSpace) reserve(s, e uint64) error {
	for i, f := range a.free {
		if s >= f.start && e <= f.end && s < e {
			a.take(i, s, e)
			a.used += e - s
			return nil
		}
	}
	return fmt.Errorf("iova range [%#x, %#x) is not free in [%#x, %#x): %w", s, e, a.base, a.limit, kernel.ErrBadAddress)
}

// take removes [s, e) from free span i, which contains it.
func (a *iovaSpace) take(i int, s, e uint64) {
	f := a.free[i]
	switch {
	case s == f.start && e == f.end:
		a.free = append(a.free[:i], a.free[i+1:]...)
	case s == f.start:
		a.free[i].start = e
	case e == f.end:
		a.free[i].end = s
	default:
		a.free = append(a.free, span{})
		copy(a.free[i+2:], a.free[i+1:])
		a.free[i] = span{f.start, s}
		a.free[i+1] = span{e, f.end}
	}
}

// release returns [s, s+size) to the free list. Freeing space that is
// already free or outside the space is an error and changes nothing.
func (a *iovaSpace) release(s, size uint64) error {
	e := s + size
	if size == 0 || e < s || s < a.base || e > a.limit {
		return fmt.Errorf("iova free [%#x, %#x) outside [%#x, %#x): %w", s, e, a.base, a.limit, kernel.ErrBadAddress)
	}
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].start >= s })
	if (i > 0 && a.free[i-1].end > s) || (i < len(a.free) && a.free[i].start < e) {
		return fmt.Errorf("iova free [%#x, %#x): overlaps free space: %w", s, e, kernel.ErrNotMapped)
	}
	mergeLeft := i > 0 && a.free[i-1].end == s
	mergeRight := i < len(a.free) && a.free[i].start == e
	switch {
	case mergeLeft && mergeRight:
		a.free[i-1].end = a.free[i].end
		a.free = append(a.free[:i], a.free[i+1:]...)
	case mergeLeft:
		a.free[i-1].end = e
	case mergeRight:
		a.free[i].start = s
	default:
		a.free = append(a.free, span{})
		copy(a.free[i+1:], a.free[i:])
		a.free[i] = span{s, e}
	}
	a.used -= size
	return nil
}
