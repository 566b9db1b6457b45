package igc

import "math/bits"

// chunkTable finds a chunk's mapping by the chunk's data address: an
// open-addressed hash with linear probing, sized to at least twice its
// bound so probes stay short. A refill looks up every chunk gVisor's pool
// hands it; this costs one multiply and, almost always, one probe.
type chunkTable struct {
	slots []*chunkMap // len a power of two; nil: empty
	shift uint        // 64 - log2(len(slots))
	n     int
}

func newChunkTable(bound int) chunkTable {
	bound = max(bound, 1)
	size := 1 << bits.Len(uint(2*bound-1)) // the power of two >= 2*bound
	return chunkTable{slots: make([]*chunkMap, size), shift: uint(64 - bits.Len(uint(size-1)))}
}

// home is key's first slot. Chunks are 2 KiB aligned, so the low bits say
// nothing; Fibonacci hashing spreads the rest.
func (t *chunkTable) home(key uintptr) int {
	return int((uint64(key) >> 11) * 0x9e3779b97f4a7c15 >> t.shift)
}

func (t *chunkTable) len() int { return t.n }

// get returns the mapping of the chunk at key, or nil.
func (t *chunkTable) get(key uintptr) *chunkMap {
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		m := t.slots[i]
		if m == nil || m.key == key {
			return m
		}
	}
}

// put adds m; its key must not be in the table and the table not full.
func (t *chunkTable) put(m *chunkMap) {
	mask := len(t.slots) - 1
	i := t.home(m.key)
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = m
	t.n++
}

// del removes the mapping at key, if any, shifting later entries of its
// probe run back so that no lookup stops early at the hole.
func (t *chunkTable) del(key uintptr) {
	mask := len(t.slots) - 1
	i := t.home(key)
	for ; t.slots[i] != nil && t.slots[i].key != key; i = (i + 1) & mask {
	}
	if t.slots[i] == nil {
		return
	}
	t.n--
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		// Move the entry at j into the hole at i unless its home lies
		// cyclically in (i, j]: then it is reachable where it is.
		h := t.home(t.slots[j].key)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nil
}

// all returns the mappings, for a sweep that may delete them.
func (t *chunkTable) all() []*chunkMap {
	out := make([]*chunkMap, 0, t.n)
	for _, m := range t.slots {
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}
