package nicmodel

import (
	"sync"
	"sync/atomic"
)

// PacketBuffer is a receive packet buffer: frames wait here in arrival
// order, each with what the model decided about it on arrival (M), until
// the model drains them into its rings. It holds at most a limit of frame
// bytes and reuses the copies it has drained. Any goroutine may push; one
// drainer at a time (serialised by the model) takes from the head.
type PacketBuffer[M any] struct {
	mu     sync.Mutex
	queue  []Held[M]
	free   [][]byte
	used   int
	limit  int
	queued atomic.Int32

	// Starved says the head frame found too few descriptors and was
	// counted in RNBC once; the drainer owns it. Pop and Reset clear it.
	Starved bool
}

// Held is one waiting frame: a copy of its bytes and its arrival state.
type Held[M any] struct {
	Frame []byte
	Meta  M
}

// NewPacketBuffer returns an empty buffer of limit bytes.
func NewPacketBuffer[M any](limit int) *PacketBuffer[M] {
	return &PacketBuffer[M]{limit: limit}
}

// Len is the number of waiting frames; it does not take the lock.
func (p *PacketBuffer[M]) Len() int { return int(p.queued.Load()) }

// Push copies f in at the tail with meta; it reports false, keeping
// nothing, when the frame does not fit.
func (p *PacketBuffer[M]) Push(f []byte, meta M) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used+len(f) > p.limit {
		return false
	}
	var b []byte
	if k := len(p.free); k > 0 && cap(p.free[k-1]) >= len(f) {
		b, p.free = p.free[k-1][:len(f)], p.free[:k-1]
	} else {
		b = make([]byte, len(f), max(len(f), 2048))
	}
	copy(b, f)
	p.queue = append(p.queue, Held[M]{b, meta})
	p.used += len(f)
	p.queued.Add(1)
	return true
}

// Head returns the oldest frame. Only the drainer removes frames, so it
// stays valid until Pop.
func (p *PacketBuffer[M]) Head() (*Held[M], bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return nil, false
	}
	return &p.queue[0], true
}

// Pop drops the oldest frame, keeping its copy for reuse.
func (p *PacketBuffer[M]) Pop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.queue[0]
	p.queue[0] = Held[M]{}
	p.queue = p.queue[1:]
	if len(p.queue) == 0 {
		p.queue = p.queue[:0:0]
	}
	p.used -= len(h.Frame)
	p.free = append(p.free, h.Frame)
	p.queued.Add(-1)
	p.Starved = false
}

// Drain hands the waiting frames, oldest first, to deliver and drops each
// one it takes, until the buffer is empty or deliver refuses a frame,
// which stays at the head. The caller serialises drains; pushes may run
// alongside.
func (p *PacketBuffer[M]) Drain(deliver func(h *Held[M]) bool) {
	for {
		h, ok := p.Head()
		if !ok || !deliver(h) {
			return
		}
		p.Pop()
	}
}

// Reset empties the buffer, as a device reset does.
func (p *PacketBuffer[M]) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.queue {
		p.free = append(p.free, h.Frame)
	}
	p.queue, p.used, p.Starved = nil, 0, false
	p.queued.Store(0)
}
