package sim

import (
	"sync/atomic"
	"time"
)

// maxRealWait bounds how long Wait blocks in real time before it lets
// virtual time run out: long enough for a model goroutine to catch up,
// short enough to keep tests fast.
const maxRealWait = time.Millisecond

// IRQ is an edge-triggered interrupt line from a device model to its
// driver. Raises while nobody waits collapse into one pending edge.
type IRQ struct {
	clock  *Clock
	ch     chan struct{}
	raised atomic.Uint64
}

// NewIRQ returns a line whose timeouts run on clock.
func NewIRQ(clock *Clock) *IRQ {
	return &IRQ{clock: clock, ch: make(chan struct{}, 1)}
}

// Raise signals the line.
func (q *IRQ) Raise() {
	q.raised.Add(1)
	select {
	case q.ch <- struct{}{}:
	default:
	}
}

// Raised returns how many times Raise was called.
func (q *IRQ) Raised() uint64 { return q.raised.Load() }

// Wait returns true at once if the line was raised, else waits up to
// timeout of virtual time for it. It is a kernel.Waiter.
func (q *IRQ) Wait(timeout time.Duration) bool {
	select {
	case <-q.ch:
		return true
	default:
	}
	if timeout <= 0 {
		return false
	}
	t := time.NewTimer(min(timeout, maxRealWait))
	defer t.Stop()
	select {
	case <-q.ch:
		return true
	case <-t.C:
		q.clock.Advance(timeout)
		return false
	}
}
