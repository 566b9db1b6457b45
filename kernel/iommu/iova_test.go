package iommu

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ether9/ether9/kernel"
)

func TestIOVAAlloc(t *testing.T) {
	a := newIOVASpace(0x1000, 0x10_0000)
	s1, err := a.alloc(0x3000, 0x1000, 0)
	if err != nil || s1 != 0x1000 {
		t.Fatalf("first alloc = %#x, %v; want 0x1000", s1, err)
	}
	// 64 KiB alignment with a phase of 0x2000.
	s2, err := a.alloc(0x1000, 0x10000, 0x2000)
	if err != nil || s2 != 0x2000+0x10000 {
		t.Fatalf("aligned alloc = %#x, %v; want 0x12000", s2, err)
	}
	s3, err := a.alloc(0x1000, 0x1000, 0)
	if err != nil || s3 != 0x4000 {
		t.Fatalf("alloc after = %#x, %v; want 0x4000 (first fit)", s3, err)
	}
	if err := a.release(s1, 0x3000); err != nil {
		t.Fatal(err)
	}
	if err := a.release(s1, 0x3000); !errors.Is(err, kernel.ErrNotMapped) {
		t.Errorf("double free: %v, want ErrNotMapped", err)
	}
	if err := a.release(0x20_0000, 0x1000); !errors.Is(err, kernel.ErrBadAddress) {
		t.Errorf("free outside: %v, want ErrBadAddress", err)
	}
	if _, err := a.alloc(0x10_0000, 0x1000, 0); !errors.Is(err, kernel.ErrNoIOVASpace) {
		t.Errorf("oversized alloc: %v, want ErrNoIOVASpace", err)
	}
	for _, bad := range [][3]uint64{{0, 0x1000, 0}, {0x1000, 0x3000, 0}, {0x1000, 0x1000, 0x1000}} {
		if _, err := a.alloc(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("alloc(%#x, %#x, %#x) accepted", bad[0], bad[1], bad[2])
		}
	}
}

// TestIOVARandom checks the allocator against a page bitmap: allocations
// never overlap, stay inside the space, keep their alignment, and after
// everything is freed the space is one span again.
func TestIOVARandom(t *testing.T) {
	const pages = 1024
	a := newIOVASpace(kernel.PageSize, pages*kernel.PageSize)
	var used [pages]bool
	type alloc struct{ s, n uint64 }
	var live []alloc
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		if len(live) > 0 && rng.IntN(2) == 0 {
			k := rng.IntN(len(live))
			x := live[k]
			live = append(live[:k], live[k+1:]...)
			if err := a.release(x.s, x.n); err != nil {
				t.Fatalf("release %#x+%#x: %v", x.s, x.n, err)
			}
			for p := x.s / kernel.PageSize; p < (x.s+x.n)/kernel.PageSize; p++ {
				used[p] = false
			}
			continue
		}
		n := uint64(1+rng.IntN(16)) * kernel.PageSize
		align := uint64(kernel.PageSize) << rng.IntN(4)
		phase := uint64(rng.IntN(int(align/kernel.PageSize))) * kernel.PageSize
		s, err := a.alloc(n, align, phase)
		if errors.Is(err, kernel.ErrNoIOVASpace) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if s%align != phase || s < kernel.PageSize || s+n > pages*kernel.PageSize {
			t.Fatalf("alloc(%#x, %#x, %#x) = %#x", n, align, phase, s)
		}
		for p := s / kernel.PageSize; p < (s+n)/kernel.PageSize; p++ {
			if used[p] {
				t.Fatalf("alloc %#x+%#x overlaps page %d", s, n, p)
			}
			used[p] = true
		}
		live = append(live, alloc{s, n})
	}
	for _, x := range live {
		if err := a.release(x.s, x.n); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.free) != 1 || a.free[0] != (span{kernel.PageSize, pages * kernel.PageSize}) || a.used != 0 {
		t.Errorf("after freeing all: free %v used %d", a.free, a.used)
	}
}
