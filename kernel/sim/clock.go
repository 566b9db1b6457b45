package sim

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Clock is virtual time, safe for concurrent use. Sleep advances it at
// once, so reset and link delays cost nothing in tests.
type Clock struct{ now atomic.Int64 }

// NewClock returns a clock at zero.
func NewClock() *Clock { return &Clock{} }

// Now returns the virtual time since the clock was made.
func (c *Clock) Now() time.Duration { return time.Duration(c.now.Load()) }

// Sleep advances the clock by d and yields the processor, so that models
// running beside the sleeper make progress.
func (c *Clock) Sleep(d time.Duration) {
	c.Advance(d)
	runtime.Gosched()
}

// Advance moves the clock forward by d; negative d is ignored.
func (c *Clock) Advance(d time.Duration) {
	if d > 0 {
		c.now.Add(int64(d))
	}
}
