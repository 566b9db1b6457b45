package nicmodel

import (
	"encoding/binary"
	"testing"
)

// countingDMA is flatDMA counting reads.
type countingDMA struct {
	flatDMA
	reads int
}

func (m *countingDMA) Read(addr uint64, b []byte) error {
	m.reads++
	return m.flatDMA.Read(addr, b)
}

func TestRxPrefetch(t *testing.T) {
	dma := &countingDMA{flatDMA: flatDMA{mem: make([]byte, 1<<16)}}
	const base = 0x1000
	for i := range 16 {
		binary.LittleEndian.PutUint64(dma.mem[base+i*DescLen:], uint64(0x100000+i))
	}
	r := RxRing{Base: base, Count: 16, Head: 10, Tail: 4, Gen: 1}
	if r.Free() != 10 {
		t.Fatalf("free %d, want 10", r.Free())
	}
	var p RxPrefetch
	for i, want := range []int{10, 11, 12, 13, 14, 15, 0, 1, 2, 3} {
		d, err := p.Desc(dma, r, uint32(want), 4)
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(d); got != uint64(0x100000+want) {
			t.Fatalf("descriptor %d: buffer %#x", i, got)
		}
	}
	// 10-13, 14-15 (the ring's end), 0-3.
	if dma.reads != 3 {
		t.Errorf("%d reads, want 3", dma.reads)
	}
	// Software rewrites a descriptor the cache holds: the cache still
	// gives the old one, until the ring is set up again.
	p.Desc(dma, RxRing{Base: base, Count: 16, Tail: 8, Gen: 1}, 4, 4)
	binary.LittleEndian.PutUint64(dma.mem[base+5*DescLen:], 0xdead)
	d, _ := p.Desc(dma, RxRing{Base: base, Count: 16, Tail: 8, Gen: 1}, 5, 4)
	if binary.LittleEndian.Uint64(d) != 0x100005 {
		t.Error("a held descriptor was read again")
	}
	d, _ = p.Desc(dma, RxRing{Base: base, Count: 16, Tail: 8, Gen: 2}, 5, 4)
	if binary.LittleEndian.Uint64(d) != 0xdead {
		t.Error("a new ring set-up kept the old descriptors")
	}
	// Nothing handed over, a bad ring, a refused read.
	if _, err := p.Desc(dma, RxRing{Base: base, Count: 16, Tail: 7, Gen: 3}, 7, 4); err == nil {
		t.Error("read the tail descriptor")
	}
	if _, err := p.Desc(dma, RxRing{Base: base}, 0, 4); err == nil {
		t.Error("read from a ring of no descriptors")
	}
	dma.deny = [2]uint64{base, base + 0x100}
	if _, err := p.Desc(dma, RxRing{Base: base, Count: 16, Tail: 8, Gen: 4}, 0, 4); err == nil {
		t.Error("a refused read gave a descriptor")
	}
}
