package nicmodel

import "errors"

// RxRing is a receive ring as its registers read when a frame arrives.
type RxRing struct {
	Base       uint64 // RDBAL, RDBAH
	Count      uint32 // RDLEN in descriptors
	Head, Tail uint32 // RDH, RDT
	Gen        uint64 // the ring's set-ups so far: a cache of an older one is stale
}

// Free is how many descriptors software has handed over, head to tail.
func (r RxRing) Free() uint32 {
	if r.Count == 0 || r.Head >= r.Count || r.Tail >= r.Count {
		return 0
	}
	return (r.Tail + r.Count - r.Head) % r.Count
}

// RxPrefetchMax is the deepest descriptor prefetch a model may ask for.
const RxPrefetchMax = 16

// RxPrefetch is a receive queue's descriptor prefetch cache: descriptors
// software has handed over (head to tail) are read several at a time and
// kept until used or until the ring is set up again. Like the hardware's,
// it does not notice software rewriting a descriptor it already handed
// over.
type RxPrefetch struct {
	buf          [RxPrefetchMax * DescLen]byte
	gen, base    uint64
	slot, n, off uint32 // ring slot of buf[off], descriptors left from there
}

// errNoDesc is a descriptor asked for that software has not handed over.
var errNoDesc = errors.New("nicmodel: receive descriptor not handed over")

// Desc returns the descriptor at slot of ring r, reading up to depth
// descriptors from slot (no further than the tail or the ring's end)
// when the cache does not hold it. It stays valid until the next Desc.
func (p *RxPrefetch) Desc(dma DMA, r RxRing, slot, depth uint32) ([]byte, error) {
	if p.n == 0 || p.slot != slot || p.base != r.Base || p.gen != r.Gen {
		p.n = 0
		if slot >= r.Count || r.Tail >= r.Count {
			return nil, errNoDesc
		}
		k := min(depth, RxPrefetchMax, r.Count-slot, (r.Tail+r.Count-slot)%r.Count)
		if k == 0 {
			return nil, errNoDesc
		}
		if err := dma.Read(r.Base+uint64(slot)*DescLen, p.buf[:k*DescLen]); err != nil {
			return nil, err
		}
		p.n, p.off, p.slot, p.base, p.gen = k, 0, slot, r.Base, r.Gen
	}
	d := p.buf[p.off*DescLen : (p.off+1)*DescLen]
	p.off, p.n, p.slot = p.off+1, p.n-1, (slot+1)%r.Count
	return d, nil
}
