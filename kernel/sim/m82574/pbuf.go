package m82574

import (
	"sync"
	"sync/atomic"
)

// packetBuffer is the receive packet buffer of Options.DeferRx: frames
// that passed the filters wait here until the driver's receive path next
// reads ICR or RDH or writes RDT, which moves them into the ring on the
// driver's own goroutine. The DMA
// into the ring is then ordered with the driver's reads of it, as one CPU
// observes a device, and the race detector stays quiet. A frame that finds
// too few free descriptors stays at the head (counted once in RNBC); a
// frame that finds the buffer full is missed (MPC).
type packetBuffer struct {
	mu     sync.Mutex
	queue  [][]byte
	free   [][]byte
	used   int
	limit  int
	queued atomic.Int32

	starved bool // the head frame was counted in RNBC; guarded by rxMu
}

func newPacketBuffer(limit int) *packetBuffer {
	return &packetBuffer{limit: limit}
}

func (p *packetBuffer) push(f []byte) bool {
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
	p.queue = append(p.queue, b)
	p.used += len(f)
	p.queued.Add(1)
	return true
}

// head returns the oldest frame, or nil. Only the drainer removes frames,
// so the slice stays valid until pop.
func (p *packetBuffer) head() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return nil
	}
	return p.queue[0]
}

func (p *packetBuffer) pop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.queue[0]
	p.used -= len(b)
	p.queue = append(p.queue[:0], p.queue[1:]...)
	p.free = append(p.free, b)
	p.queued.Add(-1)
}

func (p *packetBuffer) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, p.queue...)
	p.queue = p.queue[:0]
	p.used = 0
	p.queued.Store(0)
	p.starved = false
}

// drainRx moves waiting frames into the ring until it is empty or the
// ring has too few free descriptors.
func (n *NIC) drainRx() {
	if n.pb == nil || n.pb.queued.Load() == 0 {
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	for {
		f := n.pb.head()
		if f == nil {
			return
		}
		if !n.rxFrame(f) {
			if !n.pb.starved {
				n.pb.starved = true
				n.mu.Lock()
				n.statLocked(RNBC, 1)
				n.mu.Unlock()
			}
			return
		}
		n.pb.starved = false
		n.pb.pop()
	}
}
