// Package intr shares a device's one interrupt among its queues' poll
// loops.
//
// A multi-queue NIC routes each queue's causes to its own MSI-X vector,
// and each vector masks itself as it fires, so a busy queue takes no
// interrupts. When a queue's poll loop runs dry it re-arms its vector and
// sleeps. Here every vector of a function arrives on one kernel.Waiter,
// whose edges one Wait consumes: Line turns it into a broadcast, so one
// interrupt wakes every loop asleep when it came, and the loop whose
// vector fired finds its work.
package intr

import (
	"sync"
	"time"

	"github.com/ether9/ether9/kernel"
)

// Line is one interrupt shared by several poll loops. One loop at a time
// sleeps on the Waiter; the others wait for that sleep to end and share
// its result.
//
// A loop takes a Mark before it re-arms its vector and passes it to
// Wait, which returns at once if an interrupt was taken since: one that
// fired between the re-arm and the sleep, and was consumed by another
// loop's sleep, is not lost.
type Line struct {
	w      kernel.Waiter
	mu     sync.Mutex
	raised Mark   // interrupts taken so far
	sleep  *sleep // the sleep in progress, nil if none
}

// Mark is a point in a Line's sequence of interrupts.
type Mark uint64

type sleep struct {
	done   chan struct{}
	raised bool // set before done closes
}

// NewLine shares w; a nil w (no interrupt) polls.
func NewLine(w kernel.Waiter) *Line {
	if w == nil {
		w = kernel.PollWaiter{}
	}
	return &Line{w: w}
}

// Mark returns the current point, to be taken before re-arming.
func (l *Line) Mark() Mark {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.raised
}

// Wait sleeps until an interrupt is taken after m or timeout passes, and
// reports whether one was. A loop that joins another's sleep returns when
// that sleep ends, which may be before or after its own timeout: either
// way its caller only polls again.
func (l *Line) Wait(timeout time.Duration, m Mark) bool {
	l.mu.Lock()
	if l.raised != m {
		l.mu.Unlock()
		return true
	}
	if s := l.sleep; s != nil {
		l.mu.Unlock()
		<-s.done
		return s.raised
	}
	s := &sleep{done: make(chan struct{})}
	l.sleep = s
	l.mu.Unlock()
	s.raised = l.w.Wait(timeout)
	l.mu.Lock()
	if s.raised {
		l.raised++
	}
	l.sleep = nil
	l.mu.Unlock()
	close(s.done)
	return s.raised
}
