package igc

import (
	"math/rand/v2"
	"testing"
)

// TestChunkTableAgainstMap drives the table and a Go map with the same
// random puts and deletes of 2 KiB-aligned keys, clustered so that probe
// runs wrap and deletions shift entries back, and checks every key after
// each step.
func TestChunkTableAgainstMap(t *testing.T) {
	for _, bound := range []int{1, 2, 7, 512} {
		tab := newChunkTable(bound)
		if len(tab.slots) < 2*bound || len(tab.slots)&(len(tab.slots)-1) != 0 {
			t.Fatalf("bound %d: %d slots", bound, len(tab.slots))
		}
		ref := map[uintptr]*chunkMap{}
		rng := rand.New(rand.NewPCG(1, uint64(bound)))
		keys := make([]uintptr, 4*bound)
		for i := range keys {
			keys[i] = uintptr(0xc000000000 + i*2048)
		}
		for step := 0; step < 20000; step++ {
			k := keys[rng.IntN(len(keys))]
			if _, ok := ref[k]; ok {
				tab.del(k)
				delete(ref, k)
			} else if len(ref) < bound {
				m := &chunkMap{key: k}
				tab.put(m)
				ref[k] = m
			}
			if tab.len() != len(ref) {
				t.Fatalf("bound %d step %d: len %d, want %d", bound, step, tab.len(), len(ref))
			}
			for _, k := range keys {
				if got, want := tab.get(k), ref[k]; got != want {
					t.Fatalf("bound %d step %d: get(%#x) = %p, want %p", bound, step, k, got, want)
				}
			}
		}
		if got := len(tab.all()); got != len(ref) {
			t.Fatalf("bound %d: all() has %d, want %d", bound, got, len(ref))
		}
		tab.del(keys[0] + 1) // never present: no change
		if tab.len() != len(ref) {
			t.Fatalf("bound %d: deleting an absent key changed the length", bound)
		}
	}
}

func BenchmarkChunkTableGet(b *testing.B) {
	const n = 512
	tab := newChunkTable(n)
	keys := make([]uintptr, n)
	for i := range keys {
		keys[i] = uintptr(0xc000100000 + i*2048*3)
		tab.put(&chunkMap{key: keys[i]})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if tab.get(keys[i&(n-1)]) == nil {
			b.Fatal("missing")
		}
	}
}
