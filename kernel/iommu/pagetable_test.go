package iommu

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// refPage is what the reference says one IOVA page translates to.
type refPage struct {
	phys  kernel.PhysAddr
	write bool
}

type refKey struct {
	dev  pci.Addr
	page uint64
}

type liveMap struct {
	dev   pci.Addr
	addr  kernel.DMAAddr
	size  int
	dir   kernel.Direction
	buf   []byte
	coh   *kernel.Coherent
	pages []uint64
}

// TestRandomMapUnmap drives thousands of random maps and unmaps (heap
// buffers, scattered and contiguous, small coherent allocations and 2 MiB
// ones) on two devices and checks every step against a reference map by
// translating through the VT-d model, IOTLB on: every mapped IOVA
// translates exactly, with exactly its permissions, and every unmapped one
// faults once its invalidation is done (at once in strict mode, at the end
// of the batch in deferred mode, whose IOVAs are never reused before).
// Under caching mode the faults of those checks leave not-present leaves
// cached, so every map of a reused IOVA must invalidate.
func TestRandomMapUnmap(t *testing.T) {
	for _, c := range []struct {
		name   string
		aw     int
		levels int
		mode   Mode
		cm     bool
	}{
		{"4-level", 48, 4, Strict, false},
		{"3-level", 39, 3, Strict, false},
		{"4-level deferred", 48, 4, Deferred, false},
		{"4-level caching mode", 48, 4, Strict, true},
		{"3-level caching mode deferred", 39, 3, Deferred, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := vtd.QEMU()
			cfg.AddrWidth = c.aw
			cfg.CachingMode = c.cm
			r := newRig(t, sim.Config{VTd: cfg}, Options{Levels: c.levels})
			if r.u.Levels() != c.levels {
				t.Fatalf("unit uses %d levels, want %d", r.u.Levels(), c.levels)
			}
			if err := r.u.SetMode(c.mode, 64); err != nil {
				t.Fatal(err)
			}
			randomMapUnmap(t, r, rand.New(rand.NewPCG(uint64(c.levels), 7)), 3000)
		})
	}
}

func randomMapUnmap(t *testing.T, r *rig, rng *rand.Rand, ops int) {
	ref := make(map[refKey]refPage)
	retiring := make(map[refKey]bool) // unmapped, invalidation pending
	var live []*liveMap
	dirs := []kernel.Direction{kernel.ToDevice, kernel.FromDevice, kernel.Bidirectional}
	doms := map[pci.Addr]*Domain{devA: r.domain(devA), devB: r.domain(devB)}
	large := 0

	check := func(lm *liveMap) {
		for _, p := range lm.pages {
			want := ref[refKey{lm.dev, p}]
			r.mustTranslate(lm.dev, p, false, want.phys, "read of mapped page")
			if want.write {
				r.mustTranslate(lm.dev, p, true, want.phys, "write of mapped page")
			} else {
				r.mustFault(lm.dev, p, true, "write of a to-device page")
			}
		}
	}
	record := func(lm *liveMap, segs []kernel.Segment) {
		first := uint64(lm.addr) &^ (kernel.PageSize - 1)
		off := int(uint64(lm.addr) & (kernel.PageSize - 1))
		if got := int(physOf(segs, 0) & (kernel.PageSize - 1)); got != off {
			t.Fatalf("dma address %#x keeps offset %#x, buffer starts at offset %#x", lm.addr, off, got)
		}
		for k := 0; k*kernel.PageSize < off+lm.size; k++ {
			idx := max(0, k*kernel.PageSize-off)
			p := first + uint64(k)*kernel.PageSize
			key := refKey{lm.dev, p}
			if _, dup := ref[key]; dup {
				t.Fatalf("iova page %#x handed out twice", p)
			}
			if retiring[key] {
				t.Fatalf("iova page %#x reused before its invalidation", p)
			}
			ref[key] = refPage{phys: physOf(segs, idx) &^ (kernel.PageSize - 1), write: lm.dir&kernel.FromDevice != 0}
			lm.pages = append(lm.pages, p)
		}
		live = append(live, lm)
		check(lm)
	}

	for op := 0; op < ops; op++ {
		if op%200 == 0 {
			r.m.Mem.SetScatter(rng.IntN(2) == 0)
		}
		dev := devA
		if rng.IntN(3) == 0 {
			dev = devB
		}
		d := doms[dev]
		switch n := rng.IntN(100); {
		case n < 40 || len(live) == 0:
			size := 1 + rng.IntN(5*kernel.PageSize)
			off := rng.IntN(kernel.PageSize)
			buf := make([]byte, off+size)[off:]
			dir := dirs[rng.IntN(len(dirs))]
			addr, err := d.Map(buf, dir)
			if err != nil {
				t.Fatalf("op %d: map %d bytes: %v", op, size, err)
			}
			record(&liveMap{dev: dev, addr: addr, size: size, dir: dir, buf: buf}, r.segs(buf))
		case n < 50:
			size := 1 + rng.IntN(3*kernel.PageSize)
			if rng.IntN(4) == 0 {
				size = largeSize << rng.IntN(2)
				if rng.IntN(2) == 0 {
					size += kernel.PageSize
				}
			}
			c, err := d.AllocCoherent(size)
			if err != nil {
				t.Fatalf("op %d: alloc coherent %d: %v", op, size, err)
			}
			phys, ok := d.Translate(c.Addr)
			if !ok {
				t.Fatalf("op %d: coherent %#x not in the domain's own tables", op, c.Addr)
			}
			if size >= largeSize {
				if _, _, left, _ := d.pt.lookup(uint64(c.Addr)); left != largeSize {
					t.Fatalf("op %d: %d-byte coherent allocation at %#x (phys %#x) not on a 2 MiB leaf", op, size, c.Addr, phys)
				}
				large++
			}
			record(&liveMap{dev: dev, addr: c.Addr, size: size, dir: kernel.Bidirectional, coh: &c},
				[]kernel.Segment{{Phys: phys, Len: size}})
		default:
			k := rng.IntN(len(live))
			lm := live[k]
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
			var err error
			if lm.coh != nil {
				err = doms[lm.dev].FreeCoherent(*lm.coh)
			} else {
				err = doms[lm.dev].Unmap(lm.addr, lm.size, lm.dir)
			}
			if err != nil {
				t.Fatalf("op %d: unmap %#x: %v", op, lm.addr, err)
			}
			for _, p := range lm.pages {
				delete(ref, refKey{lm.dev, p})
				retiring[refKey{lm.dev, p}] = true
			}
			if r.u.Stats().Pending == 0 {
				// Strict, or this unmap completed a deferred batch:
				// nothing unmapped may translate any more.
				why := fmt.Sprintf("op %d: read after unmap", op)
				for k := range retiring {
					r.mustFault(k.dev, k.page, false, why)
				}
				clear(retiring)
			}
		}
		if op%250 == 249 {
			for _, lm := range live {
				check(lm)
			}
			// Probe where the allocator hands out addresses.
			for range 200 {
				dev := []pci.Addr{devA, devB}[rng.IntN(2)]
				p := uint64(rng.IntN(1<<15)) * kernel.PageSize
				if want, ok := ref[refKey{dev, p}]; ok {
					r.mustTranslate(dev, p, false, want.phys, "probe of mapped page")
				} else if !retiring[refKey{dev, p}] { // those may be cached until the batch ends

					r.mustFault(dev, p, false, "probe of unmapped page")
				}
			}
			var mapped int64
			for _, lm := range live {
				mapped += int64(len(lm.pages))
			}
			if s := r.u.Stats(); s.MappedPages != mapped {
				t.Fatalf("op %d: stats say %d pages mapped, reference %d", op, s.MappedPages, mapped)
			}
		}
	}
	if large == 0 {
		t.Error("no 2 MiB mapping was exercised")
	}
	for _, lm := range live {
		var err error
		if lm.coh != nil {
			err = doms[lm.dev].FreeCoherent(*lm.coh)
		} else {
			err = doms[lm.dev].Unmap(lm.addr, lm.size, lm.dir)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := r.u.Flush(); err != nil {
		t.Fatal(err)
	}
	for k := range retiring {
		r.mustFault(k.dev, k.page, false, "after the final flush")
	}
	s := r.u.Stats()
	if s.MappedPages != 0 || s.IOVAInUse != 0 || s.Maps != s.Unmaps {
		t.Errorf("after unmapping everything: %+v", s)
	}
	if ms := r.m.Mem.Stats(); ms.Pins != ms.Unpins || ms.Misuses != 0 {
		t.Errorf("memory: %d pins, %d unpins, misuses %v", ms.Pins, ms.Unpins, r.m.Mem.Errors())
	}
}

// TestHighIOVAs maps 4 KiB and 2 MiB pages at IOVAs whose level-3 and
// level-4 indexes are not zero (above 1 GiB, above 512 GiB, at the top of
// the 39- and 48-bit spaces, with index bits low and high set) on 3- and
// 4-level tables, and has the device DMA through each: the model's walk
// must reach exactly that buffer, and the pages beside each mapping and
// the IOVAs one index bit away at every level above its leaf must fault.
// Reserved holes below each target make the allocator hand it out.
func TestHighIOVAs(t *testing.T) {
	const gib = 1 << 30
	type target struct {
		iova  uint64
		large bool // a 2 MiB leaf, else 4 KiB
	}
	low := []target{
		{1 * gib, false},                          // level-3 index 1
		{3*gib + 5*largeSize, true},               // level 3: 3, level 2: 5
		{0x155*gib + 0xaa<<21 + 0x155<<12, false}, // 341, 170, 341
		{1<<39 - 2*largeSize, true},               // level 3: 511, level 2: 510
		{1<<39 - kernel.PageSize, false},          // the last page of 39 bits
	}
	high := []target{
		{1 << 39, false}, // level-4 index 1
		{0xaa<<39 + 0x155*gib + 0x1aa<<21 + 0x55<<12, false}, // 170, 341, 426, 85
		{1 << 47, false},                        // level-4 index 256
		{0x155<<39 + 0xaa*gib + 0x55<<21, true}, // 341, 170, 85
		{1<<48 - 2*largeSize, true},             // 511, 511, 510
		{1<<48 - kernel.PageSize, false},        // the last page of 48 bits
	}
	for _, c := range []struct {
		name   string
		aw     int
		levels int
		top    uint64
	}{
		{"4-level", 48, 4, 1 << 48},
		{"3-level", 39, 3, 1 << 39},
		{"3-level on a 48-bit unit", 48, 3, 1 << 39},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := vtd.QEMU()
			cfg.AddrWidth = c.aw
			r := newRig(t, sim.Config{VTd: cfg}, Options{Levels: c.levels})
			if r.u.Levels() != c.levels {
				t.Fatalf("unit uses %d levels, want %d", r.u.Levels(), c.levels)
			}
			targets := low
			if c.levels == 4 {
				targets = append(slices.Clone(low), high...)
			}
			slices.SortFunc(targets, func(a, b target) int { return cmp.Compare(a.iova, b.iova) })
			d := r.domain(devA)
			type placed struct {
				iova, size uint64
				leaf       int // level of the leaf
				c          kernel.Coherent
				written    int // bytes of patterns the device wrote
			}
			var maps []*placed
			for _, tg := range targets {
				size, leaf := uint64(kernel.PageSize), 1
				if tg.large {
					size, leaf = largeSize, 2
				}
				if free := d.iova.free[0].start; free < tg.iova {
					hole, err := d.ReserveHole(int(tg.iova - free))
					if err != nil || uint64(hole) != free {
						t.Fatalf("hole below %#x: at %#x, %v; want at %#x", tg.iova, hole, err, free)
					}
				}
				co, err := d.AllocCoherent(int(size))
				if err != nil {
					t.Fatalf("map %#x bytes at %#x: %v", size, tg.iova, err)
				}
				if uint64(co.Addr) != tg.iova {
					t.Fatalf("map of %#x bytes at %#x, want %#x", size, co.Addr, tg.iova)
				}
				if _, _, left, _ := d.pt.lookup(tg.iova); left != size {
					t.Fatalf("mapping at %#x: leaf covers %#x bytes, want %#x", tg.iova, left, size)
				}
				maps = append(maps, &placed{iova: tg.iova, size: size, leaf: leaf, c: co})
			}
			inside := func(iova uint64) bool {
				for _, m := range maps {
					if iova >= m.iova && iova < m.iova+m.size {
						return true
					}
				}
				return false
			}
			for _, m := range maps {
				for _, off := range []int{0, int(m.size) / 2, int(m.size) - 64} {
					why := fmt.Sprintf("%#x-byte leaf at %#x", m.size, m.iova)
					m.written += r.dmaThrough(devA, m.c.Addr, m.c.Buf, off, why)
				}
			}
			for _, m := range maps {
				for _, n := range []uint64{m.iova - kernel.PageSize, m.iova + m.size} {
					if n < c.top && !inside(n) {
						r.mustFault(devA, n, false, fmt.Sprintf("beside the mapping at %#x", m.iova))
					}
				}
				for level := m.leaf; level <= c.levels; level++ {
					for _, bit := range []uint{0, 8} {
						a := m.iova ^ 1<<(12+9*uint(level-1)+bit)
						if a < c.top && !inside(a) {
							r.mustFault(devA, a, true, fmt.Sprintf("%#x, the mapping at %#x with level-%d index bit %d flipped", a, m.iova, level, bit))
						}
					}
				}
			}
			// Each buffer holds its own patterns and nothing else.
			for _, m := range maps {
				nz := 0
				for _, b := range m.c.Buf {
					if b != 0 {
						nz++
					}
				}
				if nz != m.written {
					t.Errorf("buffer mapped at %#x holds %d written bytes, its own patterns are %d", m.iova, nz, m.written)
				}
			}
			for _, m := range maps {
				if err := d.FreeCoherent(m.c); err != nil {
					t.Fatal(err)
				}
				r.mustFault(devA, m.iova, false, "after FreeCoherent")
			}
			if s := r.u.Stats(); s.MappedPages != 0 {
				t.Errorf("after freeing everything: %d pages mapped", s.MappedPages)
			}
		})
	}
}

// TestLargeMapFragmented: when no 2 MiB-aligned IOVA range is free but an
// unaligned one is, a 2 MiB mapping still succeeds there on 4 KiB leaves
// and the device reaches all of it.
func TestLargeMapFragmented(t *testing.T) {
	// [0x1000, 4 MiB + 4 KiB): after a hole up to 2 MiB + 4 KiB, the only
	// aligned slot is taken and exactly 2 MiB is left, unaligned.
	r := newRig(t, sim.Config{VTd: vtd.QEMU()}, Options{IOVALimit: 2*largeSize + kernel.PageSize})
	d := r.domain(devA)
	if _, err := d.ReserveHole(largeSize); err != nil {
		t.Fatal(err)
	}
	c, err := d.AllocCoherent(largeSize)
	if err != nil {
		t.Fatalf("2 MiB allocation in a fragmented IOVA space: %v", err)
	}
	if c.Addr != largeSize+kernel.PageSize {
		t.Fatalf("2 MiB allocation at %#x, want the free %#x", c.Addr, largeSize+kernel.PageSize)
	}
	for _, off := range []int{0, kernel.PageSize, largeSize - 64} {
		r.dmaThrough(devA, c.Addr, c.Buf, off, "2 MiB on 4 KiB leaves")
	}
	if err := d.FreeCoherent(c); err != nil {
		t.Fatal(err)
	}
	r.mustFault(devA, uint64(c.Addr), false, "after FreeCoherent")
}
