package netstack

import "time"

// IdleTick is the clock an idle machine wakes by: the instants Epoch +
// k*Period. Every timer that runs while nothing happens (each idle poll
// loop's wait, Options.IdleEpoch, and the system's periodic checks) ends
// at one of them, so that their timers fire in one wake-up of the machine
// instead of one each at their own phase.
type IdleTick struct {
	Epoch  time.Time
	Period time.Duration
}

// Until is the wait from now to the next tick; a wait shorter than min
// runs on to the tick after, so that a timer never fires twice for one
// tick.
func (t IdleTick) Until(now time.Time, min time.Duration) time.Duration {
	return untilTick(now.Sub(t.Epoch), t.Period, min)
}

// untilTick is the wait from since (time since the epoch) to the next
// multiple of period at least min away.
func untilTick(since, period, min time.Duration) time.Duration {
	w := period - since%period
	if w < min {
		w += period
	}
	return w
}
