package vtd

import (
	"math/rand/v2"
	"testing"
)

// TestRandomMapUnmap maps and unmaps 4 KiB and 2 MiB pages at random in
// hand-built tables, invalidating each unmap page-selectively, and checks
// every translation against a reference map: the walk, the IOTLB and the
// address-mask invalidation must agree with it at all times.
func TestRandomMapUnmap(t *testing.T) {
	for run := range 4 {
		levels, paging := 3+run%2, run >= 2
		tb := newTables(t)
		cfg := QEMU()
		cfg.PagingCache = paging
		u := newUnit(t, cfg, tb)
		src := sid(1, 2, 3)
		const did = 42
		top := tb.context(src, did, levels)
		enable(t, u, tb.root)
		rng := rand.New(rand.NewPCG(1, uint64(run)))

		type leaf struct {
			entry, phys uint64
			level       int
		}
		// The IOVA space is 64 slots of 2 MiB; a slot holds one 2 MiB
		// leaf or up to 512 4 KiB leaves below a page table.
		const slots = 64
		ref := map[uint64]leaf{} // by IOVA of the leaf
		big := map[uint64]bool{} // slots holding a 2 MiB leaf
		small := map[uint64]int{}
		nextBig, nextSmall := uint64(0x10_0000_0000), uint64(0x1_0000_0000)
		check := func(iova uint64, write bool) {
			var want uint64
			var mapped bool
			if l, ok := ref[iova&^(1<<21-1)]; ok && l.level == 2 {
				want, mapped = l.phys+iova&(1<<21-1), true
			} else if l, ok := ref[iova&^0xfff]; ok && l.level == 1 {
				want, mapped = l.phys+iova&0xfff, true
			}
			got, err := u.Translate(src, iova, write)
			f, faulted := err.(*Fault)
			switch {
			case mapped && (err != nil || uint64(got) != want):
				t.Fatalf("levels %d: %#x (write %v) = %#x, %v; want %#x", levels, iova, write, got, err, want)
			case !mapped && (!faulted || f.Reason != permReason(write)):
				t.Fatalf("levels %d: unmapped %#x (write %v) = %#x, %v; want a permission fault", levels, iova, write, got, err)
			}
		}
		for op := range 2000 {
			slot := uint64(rng.IntN(slots))
			base := slot << 21
			switch r := rng.IntN(10); {
			case r < 2 && !big[slot] && small[slot] == 0:
				nextBig += 1 << 21
				e := tb.slot(top, levels, base, 2)
				hadTable := tb.mem.get64(e)&(slR|slW) != 0
				tb.mem.put64(e, nextBig|rw|slPS)
				if hadTable {
					// A present directory entry changed: drop what
					// the unit may cache of it (IH clear).
					pageInval(u, did, base, 9, false)
				}
				ref[base] = leaf{e, nextBig, 2}
				big[slot] = true
			case r < 6 && !big[slot]:
				iova := base + uint64(rng.IntN(512))<<12
				if _, ok := ref[iova]; ok {
					break
				}
				nextSmall += 1 << 12
				e := tb.slot(top, levels, iova, 1)
				tb.mem.put64(e, nextSmall|rw)
				ref[iova] = leaf{e, nextSmall, 1}
				small[slot]++
			default:
				// Unmap something mapped in this slot, if anything.
				var victim uint64
				var l leaf
				found := false
				for iova, x := range ref {
					if iova>>21 == slot {
						victim, l, found = iova, x, true
						break
					}
				}
				if !found {
					break
				}
				tb.mem.put64(l.entry, 0)
				delete(ref, victim)
				am := uint64(0)
				if l.level == 2 {
					am = 9
					delete(big, slot)
				} else {
					small[slot]--
				}
				pageInval(u, did, victim, am, false)
			}
			// Probe a few addresses each step: in the touched slot and
			// anywhere.
			for range 4 {
				check(base+uint64(rng.IntN(1<<21)), rng.IntN(2) == 0)
				check(uint64(rng.IntN(slots))<<21+uint64(rng.IntN(1<<21)), false)
			}
			if op%500 == 0 && len(ref) == 0 && op > 0 {
				t.Fatalf("levels %d: nothing mapped after %d operations", levels, op)
			}
		}
		// A last full sweep of every page.
		for iova := uint64(0); iova < slots<<21; iova += 1 << 12 {
			check(iova+uint64(rng.IntN(4096)), false)
		}
		s := u.Stats()
		if s.IOTLBHits == 0 || s.IOTLBPage == 0 || s.Walks == 0 || paging != (s.PagingHits > 0) {
			t.Errorf("levels %d: the run never exercised the IOTLB: %+v", levels, s)
		}
	}
}
