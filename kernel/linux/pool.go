//go:build linux

package linux

import (
	"fmt"
	"sort"

	"github.com/ether9/ether9/kernel"
)

// minAlign keeps allocations on separate cache lines, so flushing one
// region never writes back a neighbour's line.
const minAlign = 64

// chunk is physically contiguous, pinned memory: one hugepage, or a run of
// 4 KiB pages that happen to be physically adjacent.
type chunk struct {
	buf  []byte
	phys kernel.PhysAddr
	free []span // sorted by off, never adjacent
}

type span struct{ off, len int }

// pool carves chunks into regions. It is pure bookkeeping: the caller
// brings memory in with add and holds the lock.
type pool struct {
	chunks []*chunk
	used   map[kernel.PhysAddr]int // region start -> size
	inUse  int
}

func newPool() *pool { return &pool{used: make(map[kernel.PhysAddr]int)} }

func (p *pool) add(buf []byte, phys kernel.PhysAddr) {
	p.chunks = append(p.chunks, &chunk{buf: buf, phys: phys, free: []span{{0, len(buf)}}})
}

// total is the memory the pool owns.
func (p *pool) total() int {
	n := 0
	for _, c := range p.chunks {
		n += len(c.buf)
	}
	return n
}

// alloc returns a zeroed region of size bytes whose physical address is a
// multiple of align, or false if no chunk has room.
func (p *pool) alloc(size, align int) (kernel.Region, bool) {
	align = max(align, minAlign)
	rounded := (size + minAlign - 1) &^ (minAlign - 1)
	for _, c := range p.chunks {
		for i, s := range c.free {
			start := int(alignUp(uint64(c.phys)+uint64(s.off), uint64(align)) - uint64(c.phys))
			if start+rounded > s.off+s.len {
				continue
			}
			c.take(i, start, rounded)
			r := kernel.Region{Buf: c.buf[start : start+size : start+rounded], Phys: c.phys + kernel.PhysAddr(start)}
			clear(r.Buf)
			p.used[r.Phys] = rounded
			p.inUse += rounded
			return r, true
		}
	}
	return kernel.Region{}, false
}

// take removes [start, start+n) from free span i, which contains it.
func (c *chunk) take(i, start, n int) {
	s := c.free[i]
	var repl []span
	if start > s.off {
		repl = append(repl, span{s.off, start - s.off})
	}
	if end := s.off + s.len; start+n < end {
		repl = append(repl, span{start + n, end - start - n})
	}
	c.free = append(c.free[:i], append(repl, c.free[i+1:]...)...)
}

// release returns a region to its chunk, merging it with free neighbours.
func (p *pool) release(r kernel.Region) error {
	n, ok := p.used[r.Phys]
	if !ok {
		return fmt.Errorf("free %#x: %w: not an allocated region", r.Phys, kernel.ErrBadAddress)
	}
	if cap(r.Buf) != n {
		return fmt.Errorf("free %#x: %w: buffer of %d bytes, region has %d", r.Phys, kernel.ErrBadAddress, cap(r.Buf), n)
	}
	for _, c := range p.chunks {
		if r.Phys < c.phys || r.Phys >= c.phys+kernel.PhysAddr(len(c.buf)) {
			continue
		}
		off := int(r.Phys - c.phys)
		i := sort.Search(len(c.free), func(i int) bool { return c.free[i].off > off })
		c.free = append(c.free[:i], append([]span{{off, n}}, c.free[i:]...)...)
		if i+1 < len(c.free) && c.free[i].off+c.free[i].len == c.free[i+1].off {
			c.free[i].len += c.free[i+1].len
			c.free = append(c.free[:i+1], c.free[i+2:]...)
		}
		if i > 0 && c.free[i-1].off+c.free[i-1].len == c.free[i].off {
			c.free[i-1].len += c.free[i].len
			c.free = append(c.free[:i], c.free[i+1:]...)
		}
		delete(p.used, r.Phys)
		p.inUse -= n
		return nil
	}
	return fmt.Errorf("free %#x: %w: outside every chunk", r.Phys, kernel.ErrBadAddress)
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }

// runs splits n consecutive virtual pages into runs whose frames are
// physically adjacent: the chunks a 4 KiB-page mapping can offer.
func runs(frames []kernel.PhysAddr) (starts []int) {
	for i := range frames {
		if i == 0 || frames[i] != frames[i-1]+pageSize {
			starts = append(starts, i)
		}
	}
	return starts
}
