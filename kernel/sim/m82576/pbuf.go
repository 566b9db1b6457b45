package m82576

import (
	"sync"
	"sync/atomic"
)

// packetBuffer is the receive packet buffer: frames that passed the
// filters and were steered to a queue wait here, in arrival order, while
// their queue has no free descriptors (and SRRCTL.Drop_En is clear) or,
// with Options.DeferRx, until the driver next touches the receive path.
// Draining happens on the goroutine that touched the registers, so the
// DMA into a ring is ordered with that driver's reads of it, as one CPU
// observes its device. A frame that finds the buffer full is missed.
type packetBuffer struct {
	mu     sync.Mutex
	queue  []heldFrame
	free   [][]byte
	used   int
	limit  int
	queued atomic.Int32

	starved bool // the head frame was counted in RNBC; guarded by rxMu
}

type heldFrame struct {
	frame []byte
	s     rxSetup
}

func newPacketBuffer(limit int) *packetBuffer { return &packetBuffer{limit: limit} }

func (p *packetBuffer) len() int { return int(p.queued.Load()) }

// push copies a frame in with its routing; it reports false when the
// buffer is full.
func (p *packetBuffer) push(f []byte, s *rxSetup) bool {
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
	h := heldFrame{frame: b, s: *s}
	h.s.pkt = packet{} // it points into the sender's frame; parsed again at drain
	p.queue = append(p.queue, h)
	p.used += len(f)
	p.queued.Add(1)
	return true
}

// head returns the oldest frame. Only the drainer (under rxMu) removes
// frames, so it stays valid until pop.
func (p *packetBuffer) head() (*heldFrame, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return nil, false
	}
	return &p.queue[0], true
}

func (p *packetBuffer) pop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.queue[0]
	p.queue[0] = heldFrame{}
	p.queue = p.queue[1:]
	if len(p.queue) == 0 {
		p.queue = p.queue[:0:0]
	}
	p.used -= len(h.frame)
	p.free = append(p.free, h.frame)
	p.queued.Add(-1)
	p.starved = false
}

func (p *packetBuffer) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue, p.used, p.starved = nil, 0, false
	p.queued.Store(0)
}

// drainRx moves waiting frames into their rings until the buffer is empty
// or its oldest frame's queue is out of descriptors.
func (n *NIC) drainRx() {
	if n.pb.len() == 0 {
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	for {
		h, ok := n.pb.head()
		if !ok {
			return
		}
		h.s.pkt = parse(h.frame, h.s.vet)
		if n.rxTry(h.frame, &h.s) == rxNoRoom && n.rxNoRoom(h.frame, &h.s, false) {
			n.pb.starved = true
			return
		}
		n.pb.pop()
	}
}

// The receive path's registers: an access to one of them moves waiting
// frames into the rings, before a read and after a write. Other registers
// leave the buffer alone, so a transmit or statistics thread never writes
// a ring the receive thread reads.
func drainsOnRead(off uint32) bool {
	if _, reg, ok := queueReg(off, RDBAL); ok {
		return reg == RDH || reg == RDT || reg == RXDCTL
	}
	return off == ICR || off == EICR
}

func drainsOnWrite(off uint32) bool {
	if _, reg, ok := queueReg(off, RDBAL); ok {
		return reg == RDT || reg == RXDCTL
	}
	return off == IMS || off == EIMS || off == ICS || off == EICS
}
