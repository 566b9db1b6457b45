// Package intr shares a function's one legacy interrupt (INTx) among its
// queues' poll loops, NAPI-style.
//
// A queue's loop polls with its budget while frames come, its causes
// masked, and calls Line.Wait only after a poll found its ring empty.
// Wait enables the queue's causes (Device.Arm) and sleeps; the line is
// taken by whichever sleeping loop holds the lead (one kernel.Waiter
// serves one sleeper at a time), which reads the cause registers once
// (Device.Causes) and wakes exactly the sleeping queues they name, masking
// their causes again (Device.Disarm). Causes that name a queue not asleep
// (it is polling, or on its way to sleep) are kept for it: its next Wait
// returns at once, so a frame that landed after that queue's last empty
// poll, whose cause another queue's wake-up read and cleared, is not lost.
package intr

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/kernel"
)

// MaxQueues is the most queues a Line serves (one bit each).
const MaxQueues = 32

// Device is how a Line programs the function's interrupt causes. Arm and
// Disarm are called with the Line's lock held, so they are serialized;
// Causes is called by the one loop that took the line.
type Device interface {
	// Arm enables the causes of the queues in q, which are going to
	// sleep; asleep is every queue asleep, q included.
	Arm(q, asleep uint32)
	// Disarm masks the causes of the queues in q, which woke or timed
	// out; asleep is the queues still asleep (none: the device raises no
	// queue interrupt at all).
	Disarm(q, asleep uint32)
	// Causes reads (and so clears) the cause registers after the line was
	// taken and returns the queues they name.
	Causes() uint32
}

// Line is one INTx shared by a function's queues.
type Line struct {
	w     kernel.Waiter
	dev   Device
	polls bool // w is no interrupt: kernel.PollWaiter

	mu      sync.Mutex
	asleep  uint32 // queues in Wait, their causes armed
	pending uint32 // causes taken for queues not asleep
	leader  bool   // a loop sleeps on w
	poke    [MaxQueues]chan struct{}

	stats    [MaxQueues]QueueStats
	taken    atomic.Uint64 // interrupts taken
	spurious atomic.Uint64 // taken with no sleeping queue to wake
}

// QueueStats count one queue's sleeps by how they ended.
type QueueStats struct {
	Wakes    atomic.Uint64 // ended by its interrupt (or one kept for it)
	Timeouts atomic.Uint64 // the timeout passed
}

// NewLine shares w among the queues of dev; a nil w (no interrupt) polls.
func NewLine(w kernel.Waiter, dev Device) *Line {
	if w == nil {
		w = kernel.PollWaiter{}
	}
	_, polls := w.(kernel.PollWaiter)
	l := &Line{w: w, dev: dev, polls: polls}
	for i := range l.poke {
		l.poke[i] = make(chan struct{}, 1)
	}
	return l
}

// EachStat passes the counters of queues 0..queues-1 (qN_irq_wake,
// qN_irq_timeout) and of the function (their sums irq_wakes and
// irq_timeouts, irq_taken, irq_spurious) to add.
func (l *Line) EachStat(queues int, add func(name string, v uint64)) {
	var wakes, timeouts uint64
	for q := range queues {
		st := &l.stats[q]
		w, to := st.Wakes.Load(), st.Timeouts.Load()
		wakes, timeouts = wakes+w, timeouts+to
		add(nicstat.QueueName(q, "irq_wake"), w)
		add(nicstat.QueueName(q, "irq_timeout"), to)
	}
	add("irq_wakes", wakes)
	add("irq_timeouts", timeouts)
	add("irq_taken", l.taken.Load())
	add("irq_spurious", l.spurious.Load())
}

// Stats returns queue q's counters.
func (l *Line) Stats(q int) *QueueStats { return &l.stats[q] }

// Counts returns how many interrupts were taken and how many of them woke
// no queue (a busy queue's cause while another slept, or a link change).
func (l *Line) Counts() (taken, spurious uint64) { return l.taken.Load(), l.spurious.Load() }

// Wait is queue q's sleep after a poll found its ring empty: it arms the
// queue's causes and sleeps until an interrupt names the queue or timeout
// passes, and reports which. It returns true at once if a cause for q was
// taken since its last Wait.
func (l *Line) Wait(q int, timeout time.Duration) bool {
	bit := uint32(1) << q
	st := &l.stats[q]
	l.mu.Lock()
	if l.pending&bit != 0 {
		l.pending &^= bit
		l.mu.Unlock()
		st.Wakes.Add(1)
		return true
	}
	l.drain(q)
	l.asleep |= bit
	l.dev.Arm(bit, l.asleep)
	deadline := time.Now().Add(timeout)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if l.asleep&bit == 0 { // a wake-up named q
			l.drain(q)
			l.handoffLocked(bit)
			l.mu.Unlock()
			st.Wakes.Add(1)
			return true
		}
		left := time.Until(deadline)
		if !l.leader {
			l.leader = true
			l.mu.Unlock()
			fired := l.w.Wait(left)
			var work uint32
			if fired || l.polls {
				// Without interrupts every sleep ends with a look at
				// the causes: that is how a link change is seen.
				work = l.dev.Causes()
			}
			l.mu.Lock()
			l.leader = false
			l.dispatchLocked(work, fired)
			if l.asleep&bit != 0 && (!fired || time.Until(deadline) <= 0) {
				l.leaveLocked(bit)
				l.mu.Unlock()
				st.Timeouts.Add(1)
				return false
			}
			continue
		}
		if left <= 0 {
			l.leaveLocked(bit)
			l.mu.Unlock()
			st.Timeouts.Add(1)
			return false
		}
		l.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(left)
		}
		select {
		case <-l.poke[q]:
		case <-timer.C:
			deadline = time.Now() // the next round times out
		}
		l.mu.Lock()
	}
}

// dispatchLocked wakes the sleeping queues in work and keeps the causes
// of the others.
func (l *Line) dispatchLocked(work uint32, fired bool) {
	wake := work & l.asleep
	l.pending |= work &^ l.asleep
	if fired {
		l.taken.Add(1)
		if wake == 0 {
			l.spurious.Add(1)
		}
	}
	if wake == 0 {
		return
	}
	l.asleep &^= wake
	l.dev.Disarm(wake, l.asleep)
	for w := wake; w != 0; w &= w - 1 {
		l.signal(bits.TrailingZeros32(w))
	}
}

// leaveLocked takes queue bit out of the sleepers, masks its causes and
// hands the lead on.
func (l *Line) leaveLocked(bit uint32) {
	l.asleep &^= bit
	l.dev.Disarm(bit, l.asleep)
	l.handoffLocked(0)
}

// handoffLocked pokes a sleeping queue other than self to take the lead,
// if nobody holds it.
func (l *Line) handoffLocked(self uint32) {
	if l.leader {
		return
	}
	if others := l.asleep &^ self; others != 0 {
		l.signal(bits.TrailingZeros32(others))
	}
}

func (l *Line) signal(q int) {
	select {
	case l.poke[q] <- struct{}{}:
	default:
	}
}

// drain drops a stale poke of queue q.
func (l *Line) drain(q int) {
	select {
	case <-l.poke[q]:
	default:
	}
}
