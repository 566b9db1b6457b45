// Package services runs the long-lived goroutines of PID 1 under a
// supervisor: a panic in one service is caught, printed with its stack,
// and the service is restarted after a back-off, so one bad packet cannot
// take the whole machine down.
package services

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Supervisor starts services and restarts them when they fail.
type Supervisor struct {
	logf     func(format string, args ...any)
	minDelay time.Duration
	maxDelay time.Duration

	wg       sync.WaitGroup
	mu       sync.Mutex
	restarts map[string]int
}

// New returns a supervisor that reports on logf. A failing service is
// restarted after minDelay, doubling up to maxDelay while it keeps failing.
func New(logf func(format string, args ...any), minDelay, maxDelay time.Duration) *Supervisor {
	if minDelay <= 0 {
		minDelay = 100 * time.Millisecond
	}
	maxDelay = max(maxDelay, minDelay)
	return &Supervisor{logf: logf, minDelay: minDelay, maxDelay: maxDelay, restarts: make(map[string]int)}
}

// PanicError is a recovered panic with the stack of the goroutine that
// panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Call runs fn, turning a panic into a *PanicError.
func Call(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// Go runs fn in its own goroutine until ctx is done. When fn returns an
// error or panics before then, the failure is logged and fn runs again. A
// nil return while ctx is live means the service finished its work.
func (s *Supervisor) Go(ctx context.Context, name string, fn func(ctx context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		delay := s.minDelay
		for {
			start := time.Now()
			err := Call(func() error { return fn(ctx) })
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				return // finished its work
			}
			if p, ok := err.(*PanicError); ok {
				s.logf("%s: %v\n%s", name, p, p.Stack)
			} else {
				s.logf("%s: %v", name, err)
			}
			s.mu.Lock()
			s.restarts[name]++
			n := s.restarts[name]
			s.mu.Unlock()
			if time.Since(start) > s.maxDelay {
				delay = s.minDelay // it ran well for a while: start the back-off over
			}
			s.logf("%s: restart %d in %v", name, n, delay)
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, s.maxDelay)
		}
	}()
}

// Restarts says how many times the named service was restarted.
func (s *Supervisor) Restarts(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts[name]
}

// Wait blocks until every service has returned for good.
func (s *Supervisor) Wait() { s.wg.Wait() }
