package kernel

import "time"

// WallClock is the Clock of real machines.
type WallClock struct{ start time.Time }

// NewWallClock returns a Clock whose zero is now.
func NewWallClock() *WallClock { return &WallClock{start: time.Now()} }

func (c *WallClock) Now() time.Duration    { return time.Since(c.start) }
func (c *WallClock) Sleep(d time.Duration) { time.Sleep(d) }

// PollWaiter waits by sleeping: the Waiter of platforms without interrupts.
type PollWaiter struct{}

func (PollWaiter) Wait(timeout time.Duration) bool {
	time.Sleep(timeout)
	return false
}
