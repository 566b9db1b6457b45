package mi225

import (
	"sync"
	"sync/atomic"
)

// packetBuffer is the receive packet buffer of Options.DeferRx. Frames
// that passed the arrival checks wait here until the driver's receive path
// next touches the device (reads ICR, EICR, RDH or RXDCTL, writes RDT,
// RXDCTL, EIMS, IMS, EICS or ICS); that access moves them into the rings
// on the driver's own
// goroutine, so the DMA into a ring is ordered with the driver's reads of
// it, as a CPU observes a device, and the race detector stays quiet. A
// frame that finds too few free descriptors stays at the head (counted
// once in RNBC) unless its queue has SRRCTL.DROP_EN; a frame that finds
// the buffer full is missed (MPC).
type packetBuffer struct {
	mu     sync.Mutex
	queue  []pbFrame
	free   [][]byte
	used   int
	limit  int
	queued atomic.Int32
}

type pbFrame struct {
	b []byte
	a rxAdmit
}

func newPacketBuffer(limit int) *packetBuffer { return &packetBuffer{limit: limit} }

func (p *packetBuffer) push(f []byte, a rxAdmit) bool {
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
	p.queue = append(p.queue, pbFrame{b, a})
	p.used += len(f)
	p.queued.Add(1)
	return true
}

// head returns the oldest frame. Only the drainer (under rxMu) removes
// frames, so it stays valid until pop.
func (p *packetBuffer) head() (pbFrame, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return pbFrame{}, false
	}
	return p.queue[0], true
}

func (p *packetBuffer) pop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.queue[0]
	p.queue[0] = pbFrame{}
	p.queue = p.queue[1:]
	if len(p.queue) == 0 {
		p.queue = p.queue[:0:0]
	}
	p.used -= len(f.b)
	p.free = append(p.free, f.b)
	p.queued.Add(-1)
}

func (p *packetBuffer) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.queue {
		p.free = append(p.free, f.b)
	}
	p.queue = p.queue[:0]
	p.used = 0
	p.queued.Store(0)
}

// drainRx moves waiting frames into the rings until the buffer is empty
// or the head frame finds too few descriptors.
func (n *NIC) drainRx() {
	if n.pb == nil || n.pb.queued.Load() == 0 {
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	for {
		f, ok := n.pb.head()
		if !ok {
			return
		}
		n.mu.Lock()
		if !n.deliverLocked(f.b, f.a, true) {
			return
		}
		n.pb.pop()
	}
}
