// Package stall fails a transfer that stops moving instead of letting it
// hang: a watchdog samples a progress count and, once the count has not
// changed for a limit, aborts the transfer once. The tests' in-process
// transfers (internal/transfer) and the self-test's transfers to a
// machine in QEMU share it.
package stall

import (
	"sync/atomic"
	"time"
)

// Watchdog watches one transfer.
type Watchdog struct {
	done   chan struct{}
	exited chan struct{}
	fired  atomic.Bool
	idle   time.Duration // how long nothing had moved when it fired
}

// Watch samples progress 100 times per limit and calls abort, once, when
// it has stayed the same for limit.
func Watch(limit time.Duration, progress func() int64, abort func()) *Watchdog {
	w := &Watchdog{done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(w.exited)
		tick := time.NewTicker(limit / 100)
		defer tick.Stop()
		last, since := progress(), time.Now()
		for {
			select {
			case <-w.done:
				return
			case now := <-tick.C:
				if p := progress(); p != last {
					last, since = p, now
					continue
				}
				if now.Sub(since) >= limit {
					w.idle = now.Sub(since)
					w.fired.Store(true)
					abort()
					return
				}
			}
		}
	}()
	return w
}

// Stop ends the watch; it may be called more than once.
func (w *Watchdog) Stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	<-w.exited
}

// Fired stops the watch and reports whether it aborted the transfer, and
// after how long without progress.
func (w *Watchdog) Fired() (bool, time.Duration) {
	w.Stop()
	if !w.fired.Load() {
		return false, 0
	}
	return true, w.idle
}
