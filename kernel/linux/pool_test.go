//go:build linux

package linux

import (
	"errors"
	"testing"

	"github.com/ether9/ether9/kernel"
)

func TestPoolAllocAlignAndReuse(t *testing.T) {
	p := newPool()
	const base = kernel.PhysAddr(0x40000000)
	p.add(make([]byte, 2*pageSize), base+0x40) // a chunk starting off a page boundary

	a, ok := p.alloc(100, 1)
	if !ok {
		t.Fatal("alloc 100 failed")
	}
	if a.Phys != base+0x40 || len(a.Buf) != 100 || cap(a.Buf) != 128 {
		t.Fatalf("first region %#x len %d cap %d, want %#x len 100 cap 128", a.Phys, len(a.Buf), cap(a.Buf), base+0x40)
	}
	b, ok := p.alloc(pageSize, pageSize)
	if !ok {
		t.Fatal("page-aligned alloc failed")
	}
	if b.Phys%pageSize != 0 || b.Phys != base+pageSize {
		t.Fatalf("page-aligned region at %#x, want %#x", b.Phys, base+pageSize)
	}
	if _, ok := p.alloc(pageSize, pageSize); ok {
		t.Fatal("a second aligned page fit in a chunk that has none left")
	}
	a.Buf[0] = 0xff
	if err := p.release(a); err != nil {
		t.Fatal(err)
	}
	c, ok := p.alloc(64, 1)
	if !ok || c.Phys != a.Phys || c.Buf[0] != 0 {
		t.Fatalf("reuse: ok %v at %#x first byte %#x, want the freed, zeroed region at %#x", ok, c.Phys, c.Buf[0], a.Phys)
	}
	if p.inUse != 64+pageSize {
		t.Fatalf("in use %d, want %d", p.inUse, 64+pageSize)
	}
}

func TestPoolReleaseMergesAndRejects(t *testing.T) {
	p := newPool()
	p.add(make([]byte, pageSize), 0x1000)
	var rs []kernel.Region
	for range 4 {
		r, ok := p.alloc(1024, 1)
		if !ok {
			t.Fatal("alloc 1024 failed")
		}
		rs = append(rs, r)
	}
	for _, i := range []int{1, 3, 0, 2} {
		if err := p.release(rs[i]); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	c := p.chunks[0]
	if len(c.free) != 1 || c.free[0] != (span{0, pageSize}) {
		t.Fatalf("free list after releasing all: %v, want one span of the whole page", c.free)
	}
	if err := p.release(rs[0]); !errors.Is(err, kernel.ErrBadAddress) {
		t.Fatalf("double free: %v, want ErrBadAddress", err)
	}
	if err := p.release(kernel.Region{Phys: 0x9000}); !errors.Is(err, kernel.ErrBadAddress) {
		t.Fatalf("foreign free: %v, want ErrBadAddress", err)
	}
	if _, ok := p.alloc(pageSize, 1); !ok {
		t.Fatal("whole page not allocatable after merging")
	}
}

func TestRunsAndSegments(t *testing.T) {
	frames := []kernel.PhysAddr{0x5000, 0x6000, 0x9000, 0xa000, 0xb000, 0x2000}
	if got, want := runs(frames), []int{0, 2, 5}; !equalInts(got, want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	// 100 bytes before the end of the first page through 2 pages later.
	segs := segments(0x7000_0000+pageSize-100, 100+pageSize+50, frames[1:])
	want := []kernel.Segment{{Phys: 0x6000 + pageSize - 100, Len: 100}, {Phys: 0x9000, Len: pageSize + 50}}
	if len(segs) != len(want) || segs[0] != want[0] || segs[1] != want[1] {
		t.Fatalf("segments %v, want %v", segs, want)
	}
}

func TestPagemapEntry(t *testing.T) {
	tests := []struct {
		e       uint64
		pfn     uint64
		wantErr bool
	}{
		{pmPresent | 0x1234, 0x1234, false},
		{pmPresent | 1<<55 | 0x77, 0x77, false}, // soft-dirty bit is not part of the frame
		{0x1234, 0, true},                       // not present
		{pmPresent | pmSwapped | 5, 0, true},
		{pmPresent, 0, true}, // frame hidden from unprivileged readers
	}
	for _, tt := range tests {
		pfn, err := pmEntry(tt.e)
		if (err != nil) != tt.wantErr || pfn != tt.pfn {
			t.Errorf("pmEntry(%#x) = %#x, %v; want %#x, error %v", tt.e, pfn, err, tt.pfn, tt.wantErr)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
