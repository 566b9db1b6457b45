package iommu

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// TestSegmentsMatchTables maps random buffers (scattered and contiguous,
// a few bytes to several MiB) and coherent allocations, and checks that
// the physical segments each mapping keeps for its syncs say, byte for
// byte at every page and segment edge, what the domain's tables and the
// unit's walk say: the tables stay what the device sees, the segments
// only spare syncs the walk. With large pages the run must have used 2 MiB
// leaves and 4 KiB ones; without, only 4 KiB ones.
func TestSegmentsMatchTables(t *testing.T) {
	for _, c := range []struct {
		name  string
		large bool
	}{{"4K and 2M leaves", true}, {"4K leaves", false}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, sim.Config{VTd: vtd.QEMU()}, Options{NoLargePages: !c.large})
			d := r.domain(devA)
			rng := rand.New(rand.NewPCG(11, 3))
			dirs := []kernel.Direction{kernel.ToDevice, kernel.FromDevice, kernel.Bidirectional}
			type live struct {
				addr kernel.DMAAddr
				size int
				dir  kernel.Direction
				coh  *kernel.Coherent
			}
			var maps []live
			leaves := map[uint64]int{} // leaf size to pages checked on it
			check := func(op int, l live) {
				m := d.live.exact(l.addr)
				if m == nil {
					t.Fatalf("op %d: mapping at %#x not indexed", op, l.addr)
				}
				total := 0
				for _, s := range m.segs {
					total += s.Len
				}
				if total < l.size {
					t.Fatalf("op %d: segments cover %d of %d bytes", op, total, l.size)
				}
				// Offsets worth checking: every IOVA page start, both
				// sides of every segment edge, the last byte, some others.
				offs := []int{0, l.size - 1}
				for o := kernel.PageSize - int(l.addr%kernel.PageSize); o < l.size; o += kernel.PageSize {
					offs = append(offs, o)
				}
				edge := 0
				for _, s := range m.segs {
					edge += s.Len
					if edge < l.size {
						offs = append(offs, edge-1, edge)
					}
				}
				for range 8 {
					offs = append(offs, rng.IntN(l.size))
				}
				for _, o := range offs {
					want := physOf(m.segs, o)
					iova := uint64(l.addr) + uint64(o)
					got, _, left, ok := d.pt.lookup(iova)
					if !ok || got != want {
						t.Fatalf("op %d: byte %d of %#x: segments say %#x, tables %#x (present %v)", op, o, l.addr, want, got, ok)
					}
					if iova%kernel.PageSize == 0 {
						if left > kernel.PageSize {
							leaves[largeSize]++
						} else {
							leaves[kernel.PageSize]++
						}
					}
				}
				// The unit's own walk, at the first and last byte.
				for _, o := range []int{0, l.size - 1} {
					r.mustTranslate(devA, uint64(l.addr)+uint64(o), false, physOf(m.segs, o), "unit walk")
				}
			}
			for op := range 300 {
				if op%50 == 0 {
					r.m.Mem.SetScatter(rng.IntN(2) == 0)
				}
				switch n := rng.IntN(100); {
				case n < 45 || len(maps) == 0:
					size := 1 + rng.IntN(5*kernel.PageSize)
					if rng.IntN(8) == 0 {
						size = 4<<20 + rng.IntN(2<<20)
					}
					off := rng.IntN(kernel.PageSize)
					buf := make([]byte, off+size)[off:]
					dir := dirs[rng.IntN(len(dirs))]
					addr, err := d.Map(buf, dir)
					if err != nil {
						t.Fatalf("op %d: map %d bytes: %v", op, size, err)
					}
					l := live{addr: addr, size: size, dir: dir}
					check(op, l)
					maps = append(maps, l)
				case n < 55:
					size := 1 + rng.IntN(3*kernel.PageSize)
					if rng.IntN(3) == 0 {
						size = largeSize + rng.IntN(largeSize)
					}
					co, err := d.AllocCoherent(size)
					if err != nil {
						t.Fatalf("op %d: alloc coherent %d bytes: %v", op, size, err)
					}
					l := live{addr: co.Addr, size: size, dir: kernel.Bidirectional, coh: &co}
					check(op, l)
					maps = append(maps, l)
				default:
					k := rng.IntN(len(maps))
					l := maps[k]
					maps = append(maps[:k], maps[k+1:]...)
					var err error
					if l.coh != nil {
						err = d.FreeCoherent(*l.coh)
					} else {
						err = d.Unmap(l.addr, l.size, l.dir)
					}
					if err != nil {
						t.Fatalf("op %d: unmap %#x: %v", op, l.addr, err)
					}
					if err := d.SyncForCPU(l.addr, 1, l.dir); !errors.Is(err, kernel.ErrNotMapped) {
						t.Fatalf("op %d: sync after unmap: %v", op, err)
					}
				}
			}
			for _, l := range maps {
				check(-1, l)
			}
			if leaves[kernel.PageSize] == 0 {
				t.Error("no 4 KiB leaf checked")
			}
			if c.large && leaves[largeSize] == 0 {
				t.Error("no 2 MiB leaf checked")
			}
			if !c.large && leaves[largeSize] != 0 {
				t.Errorf("%d pages on 2 MiB leaves with large pages off", leaves[largeSize])
			}
			t.Logf("pages checked by leaf size: %v", leaves)
		})
	}
}

// dmaUnderTest is a device's DMA view and the port its DMA goes through.
type dmaUnderTest struct {
	name    string
	dma     func(r *rig) kernel.DMA
	scatter bool
}

var syncViews = []dmaUnderTest{
	{"translated", func(r *rig) kernel.DMA { return r.domain(devA) }, false},
	{"translated scattered", func(r *rig) kernel.DMA { return r.domain(devA) }, true},
	{"passthrough", func(r *rig) kernel.DMA {
		if err := r.u.Disable(); err != nil {
			r.t.Fatal(err)
		}
		return Passthrough(r.m.Mem)
	}, false},
}

// TestSyncMovesExactlyItsRange: on non-coherent memory, a sync of any part
// of a mapping (across page and segment edges) moves exactly those bytes,
// for the CPU and for the device.
func TestSyncMovesExactlyItsRange(t *testing.T) {
	for _, v := range syncViews {
		t.Run(v.name, func(t *testing.T) {
			r := newRig(t, sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: true}, Options{})
			r.m.Mem.SetScatter(v.scatter)
			dma := v.dma(r)
			port := r.m.Port(devA)
			rng := rand.New(rand.NewPCG(5, 8))
			for round := range 40 {
				size := 1 + rng.IntN(4*kernel.PageSize)
				off := rng.IntN(kernel.PageSize)
				buf := make([]byte, off+size)[off:]
				addr, err := dma.Map(buf, kernel.Bidirectional)
				if err != nil {
					t.Fatalf("round %d: map %d bytes: %v", round, size, err)
				}
				for range 4 {
					// The CPU hands the whole buffer back (the memory counts a
					// device write to bytes still the CPU's as a misuse), the
					// device writes it, and the CPU syncs a part.
					if err := dma.SyncForDevice(addr, size, kernel.Bidirectional); err != nil {
						t.Fatal(err)
					}
					dev := make([]byte, size)
					for i := range dev {
						dev[i] = byte(rng.Uint32())
					}
					before := bytes.Clone(buf)
					if err := port.Write(uint64(addr), dev); err != nil {
						t.Fatal(err)
					}
					a := rng.IntN(size)
					b := a + 1 + rng.IntN(size-a)
					if err := dma.SyncForCPU(addr+kernel.DMAAddr(a), b-a, kernel.Bidirectional); err != nil {
						t.Fatalf("round %d: sync for cpu [%d,%d): %v", round, a, b, err)
					}
					if !bytes.Equal(buf[a:b], dev[a:b]) || !bytes.Equal(buf[:a], before[:a]) || !bytes.Equal(buf[b:], before[b:]) {
						t.Fatalf("round %d: sync for cpu of [%d,%d) of %d bytes moved the wrong bytes", round, a, b, size)
					}
					// The CPU writes the whole buffer; it syncs a part for the device.
					for i := range buf {
						buf[i] = byte(rng.Uint32())
					}
					a = rng.IntN(size)
					b = a + 1 + rng.IntN(size-a)
					if err := dma.SyncForDevice(addr+kernel.DMAAddr(a), b-a, kernel.Bidirectional); err != nil {
						t.Fatalf("round %d: sync for device [%d,%d): %v", round, a, b, err)
					}
					got := make([]byte, size)
					if err := port.Read(uint64(addr), got); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got[a:b], buf[a:b]) || !bytes.Equal(got[:a], dev[:a]) || !bytes.Equal(got[b:], dev[b:]) {
						t.Fatalf("round %d: sync for device of [%d,%d) of %d bytes moved the wrong bytes", round, a, b, size)
					}
				}
				if err := dma.Unmap(addr, size, kernel.Bidirectional); err != nil {
					t.Fatal(err)
				}
			}
			if errs := r.m.Mem.Errors(); len(errs) != 0 {
				t.Errorf("memory misuse: %v", errs)
			}
		})
	}
}

// TestCoherentSyncOnlyChecks: while the memory says streaming DMA is
// coherent, syncs are checked against their mapping but never reach the
// memory; once it stops saying so, they do.
func TestCoherentSyncOnlyChecks(t *testing.T) {
	for _, v := range syncViews {
		t.Run(v.name, func(t *testing.T) {
			r := newRig(t, sim.Config{VTd: vtd.QEMU()}, Options{})
			r.m.Mem.SetScatter(v.scatter)
			dma := v.dma(r)
			buf := make([]byte, 3000)
			addr, err := dma.Map(buf, kernel.FromDevice)
			if err != nil {
				t.Fatal(err)
			}
			before := r.m.Mem.Stats()
			for range 10 {
				if err := dma.SyncForCPU(addr, len(buf), kernel.FromDevice); err != nil {
					t.Fatal(err)
				}
				if err := dma.SyncForDevice(addr+100, 64, kernel.FromDevice); err != nil {
					t.Fatal(err)
				}
			}
			bad := []struct {
				name string
				err  error
				want error
			}{
				{"past the end", dma.SyncForCPU(addr+8, len(buf), kernel.FromDevice), kernel.ErrNotMapped},
				{"wrong direction", dma.SyncForCPU(addr, 64, kernel.ToDevice), kernel.ErrBadAddress},
				{"zero length", dma.SyncForDevice(addr, 0, kernel.FromDevice), kernel.ErrZeroLength},
				{"unmapped", dma.SyncForCPU(addr+kernel.DMAAddr(64*kernel.PageSize), 64, kernel.FromDevice), kernel.ErrNotMapped},
			}
			for _, b := range bad {
				if !errors.Is(b.err, b.want) {
					t.Errorf("%s: %v, want %v", b.name, b.err, b.want)
				}
			}
			after := r.m.Mem.Stats()
			if after.SyncsForCPU != before.SyncsForCPU || after.SyncsForDevice != before.SyncsForDevice {
				t.Errorf("coherent memory synced: %d for cpu, %d for device", after.SyncsForCPU-before.SyncsForCPU, after.SyncsForDevice-before.SyncsForDevice)
			}
			r.m.Mem.SetCoherent(false)
			if err := dma.SyncForCPU(addr, len(buf), kernel.FromDevice); err != nil {
				t.Fatal(err)
			}
			if got := r.m.Mem.Stats().SyncsForCPU - after.SyncsForCPU; got == 0 {
				t.Error("non-coherent memory not synced")
			}
			if err := dma.Unmap(addr, len(buf), kernel.FromDevice); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSyncAfterUnmap: the mapping a sync found last is forgotten with the
// mapping, and a new mapping at the same IOVA is found with its own size
// and direction.
func TestSyncAfterUnmap(t *testing.T) {
	r := qemuRig(t)
	d := r.domain(devA)
	a := make([]byte, 3000)
	addrA, err := d.Map(a, kernel.Bidirectional)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SyncForCPU(addrA, len(a), kernel.Bidirectional); err != nil {
		t.Fatal(err)
	}
	if err := d.Unmap(addrA, len(a), kernel.Bidirectional); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncForCPU(addrA, len(a), kernel.Bidirectional); !errors.Is(err, kernel.ErrNotMapped) {
		t.Fatalf("sync after unmap: %v", err)
	}
	b := make([]byte, 100)
	addrB, err := d.Map(b, kernel.ToDevice)
	if err != nil {
		t.Fatal(err)
	}
	if addrA/kernel.PageSize != addrB/kernel.PageSize {
		t.Fatalf("strict mode did not reuse the IOVA page (%#x then %#x): the test needs it", addrA, addrB)
	}
	if err := d.SyncForDevice(addrB, len(b), kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncForCPU(addrB, len(a), kernel.ToDevice); !errors.Is(err, kernel.ErrNotMapped) {
		t.Errorf("sync past the new mapping: %v", err)
	}
	if err := d.SyncForCPU(addrB, len(b), kernel.Bidirectional); !errors.Is(err, kernel.ErrBadAddress) {
		t.Errorf("sync with the old mapping's direction: %v", err)
	}
	if err := d.Unmap(addrB, len(b), kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentSync: goroutines sync long-lived mappings while others map,
// sync and unmap on the same device, for the race detector; every sync of
// a live mapping succeeds and every sync of a gone one fails.
func TestConcurrentSync(t *testing.T) {
	for _, v := range syncViews {
		t.Run(v.name, func(t *testing.T) {
			r := newRig(t, sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: true}, Options{})
			r.m.Mem.SetScatter(v.scatter)
			dma := v.dma(r)
			type held struct {
				addr kernel.DMAAddr
				size int
			}
			var ring []held
			for i := range 64 {
				size := 60 + i*97%(2*kernel.PageSize)
				addr, err := dma.Map(make([]byte, size), kernel.FromDevice)
				if err != nil {
					t.Fatal(err)
				}
				ring = append(ring, held{addr, size})
			}
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := range 3 {
				wg.Go(func() {
					for i := range 3000 {
						h := ring[(i*7+g)%len(ring)]
						if err := dma.SyncForCPU(h.addr, h.size, kernel.FromDevice); err != nil {
							errs <- err
							return
						}
						if err := dma.SyncForDevice(h.addr, min(h.size, 64), kernel.FromDevice); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			// An unmapped IOVA may be mapped again at once by the other
			// mapper, which would make the sync after Unmap rightly
			// succeed: remap keeps Map out from Unmap to that check.
			var remap sync.Mutex
			for range 2 {
				wg.Go(func() {
					for i := range 300 {
						buf := make([]byte, 100+i*13%(3*kernel.PageSize))
						remap.Lock()
						addr, err := dma.Map(buf, kernel.ToDevice)
						remap.Unlock()
						if err != nil {
							errs <- err
							return
						}
						if err := dma.SyncForDevice(addr, len(buf), kernel.ToDevice); err != nil {
							errs <- err
							return
						}
						remap.Lock()
						err = dma.Unmap(addr, len(buf), kernel.ToDevice)
						gone := dma.SyncForDevice(addr, len(buf), kernel.ToDevice)
						remap.Unlock()
						if err != nil {
							errs <- err
							return
						}
						if gone == nil {
							errs <- errors.New("sync of an unmapped buffer accepted")
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			for _, h := range ring {
				if err := dma.Unmap(h.addr, h.size, kernel.FromDevice); err != nil {
					t.Fatal(err)
				}
			}
			if ms := r.m.Mem.Stats(); ms.Pins != ms.Unpins || ms.Misuses != 0 {
				t.Errorf("%d pins, %d unpins, misuses %v", ms.Pins, ms.Unpins, r.m.Mem.Errors())
			}
		})
	}
}

// TestSyncIndexHoldsABuildRing maps about what an igc queue in the build
// layout keeps mapped at once, 512 2 KiB RX chunks (twice its 256 slots:
// the armed ones and as many out with the stack) beside 256 long-lived
// 4 KiB TX buffers, and syncs them all in turns as traffic does: after a
// first pass every sync must find its mapping in the lock-free cache.
// With a cache of 512 slots the chunks' pages shared slots with the TX
// buffers' and 38% of the build benchmark's syncs fell to the search
// under the lock.
func TestSyncIndexHoldsABuildRing(t *testing.T) {
	r := newRig(t, sim.Config{VTd: vtd.QEMU()}, Options{})
	d := r.domain(devA)
	var addrs []kernel.DMAAddr
	for _, b := range []struct{ n, size int }{{256, 4096}, {512, 2048}} {
		for i := 0; i < b.n; i++ {
			a, err := d.Map(make([]byte, b.size), kernel.FromDevice)
			if err != nil {
				t.Fatal(err)
			}
			addrs = append(addrs, a)
		}
	}
	misses := 0
	for pass := 0; pass < 2; pass++ {
		for _, a := range addrs {
			if pass == 1 {
				if m := d.live.hits[hitSlot(a)].Load(); m == nil || !m.holds(a) {
					misses++
				}
			}
			if err := d.SyncForCPU(a, 64, kernel.FromDevice); err != nil {
				t.Fatal(err)
			}
		}
	}
	if misses != 0 {
		t.Errorf("%d of %d syncs missed the index's cache (%d slots)", misses, len(addrs), hitSlots)
	}
}
