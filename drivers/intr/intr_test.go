package intr

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// edgeWaiter is an interrupt line whose raises collapse into one pending
// edge that one Wait takes.
type edgeWaiter struct{ ch chan struct{} }

func newEdge() edgeWaiter { return edgeWaiter{make(chan struct{}, 1)} }

func (w edgeWaiter) raise() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w edgeWaiter) Wait(timeout time.Duration) bool {
	t := time.NewTimer(max(timeout, 0))
	defer t.Stop()
	select {
	case <-w.ch:
		return true
	case <-t.C:
		return false
	}
}

// fakeDev latches causes as a device's cause register does: Causes reads
// and clears them. It records what is armed.
type fakeDev struct {
	causes atomic.Uint32
	mu     sync.Mutex
	armed  uint32
	arms   int
}

func (d *fakeDev) Arm(q, asleep uint32) {
	d.mu.Lock()
	d.armed |= q
	d.arms++
	d.mu.Unlock()
}

func (d *fakeDev) Disarm(q, asleep uint32) {
	d.mu.Lock()
	d.armed &^= q
	d.mu.Unlock()
}

func (d *fakeDev) Causes() uint32 { return d.causes.Swap(0) }

func (d *fakeDev) armedNow() uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.armed
}

// waitArmed waits until the queues in want are armed, failing after a
// bound with what is.
func waitArmed(t *testing.T, d *fakeDev, want uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.armedNow()&want != want {
		if time.Now().After(deadline) {
			t.Fatalf("armed %#x, want %#x", d.armedNow(), want)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// An interrupt naming queue 1 wakes queue 1 only; the others sleep on to
// their timeouts, and every queue's causes are masked again at the end.
func TestLineWakesTheNamedQueue(t *testing.T) {
	w, d := newEdge(), &fakeDev{}
	l := NewLine(w, d)
	woke := make([]chan bool, 3)
	timeouts := []time.Duration{200 * time.Millisecond, time.Minute, 200 * time.Millisecond}
	for q := range woke {
		woke[q] = make(chan bool, 1)
		go func() { woke[q] <- l.Wait(q, timeouts[q]) }()
	}
	waitArmed(t, d, 7)
	d.causes.Store(1 << 1)
	w.raise()
	select {
	case ok := <-woke[1]:
		if !ok {
			t.Fatal("queue 1 timed out")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("queue 1 not woken: armed %#x, stats %+v", d.armedNow(), l.Stats(1))
	}
	for _, q := range []int{0, 2} {
		select {
		case ok := <-woke[q]:
			if ok {
				t.Errorf("queue %d woken by queue 1's interrupt", q)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("queue %d never timed out: armed %#x", q, d.armedNow())
		}
	}
	if a := d.armedNow(); a != 0 {
		t.Errorf("armed %#x after every queue left", a)
	}
	if taken, _ := l.Counts(); taken != 1 {
		t.Errorf("%d interrupts taken, want 1", taken)
	}
	if n := l.Stats(1).Wakes.Load(); n != 1 {
		t.Errorf("queue 1: %d wakes", n)
	}
	if n := l.Stats(0).Timeouts.Load() + l.Stats(2).Timeouts.Load(); n != 2 {
		t.Errorf("queues 0 and 2: %d timeouts, want 2", n)
	}
}

// A cause read by another queue's wake-up while its own queue was busy
// ends that queue's next Wait at once, without an interrupt.
func TestLineKeepsCausesOfBusyQueues(t *testing.T) {
	w, d := newEdge(), &fakeDev{}
	l := NewLine(w, d)
	done := make(chan bool, 1)
	go func() { done <- l.Wait(0, time.Minute) }()
	waitArmed(t, d, 1)
	d.causes.Store(1<<0 | 1<<1) // queue 1 polls: not asleep
	w.raise()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("queue 0 timed out")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("queue 0 not woken")
	}
	if !l.Wait(1, time.Minute) {
		t.Fatal("queue 1 slept through the cause taken while it polled")
	}
	if l.Wait(1, time.Millisecond) {
		t.Fatal("the kept cause ended a second sleep")
	}
}

// Without interrupts every sleep times out and nothing counts as a wake.
func TestLineIdleTimesOut(t *testing.T) {
	d := &fakeDev{}
	l := NewLine(newEdge(), d)
	for range 5 {
		if l.Wait(0, time.Millisecond) {
			t.Fatal("woken with no interrupt")
		}
	}
	st := l.Stats(0)
	if st.Wakes.Load() != 0 || st.Timeouts.Load() != 5 {
		t.Errorf("wakes %d timeouts %d, want 0 and 5", st.Wakes.Load(), st.Timeouts.Load())
	}
	if d.armedNow() != 0 || d.arms != 5 {
		t.Errorf("armed %#x after %d arms", d.armedNow(), d.arms)
	}
}

// Without an interrupt source the line polls.
func TestLineNilWaiterPolls(t *testing.T) {
	l := NewLine(nil, &fakeDev{})
	if l.Wait(0, time.Millisecond) {
		t.Fatal("a line without an interrupt reported one")
	}
}

// Many queues sleeping and waking in every interleaving: each interrupt
// naming a queue ends that queue's sleep.
func TestLineConcurrent(t *testing.T) {
	w, d := newEdge(), &fakeDev{}
	l := NewLine(w, d)
	const queues, rounds = 4, 200
	var wg sync.WaitGroup
	var wakes atomic.Uint64
	stop := make(chan struct{})
	for q := range queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if l.Wait(q, 5*time.Millisecond) {
					wakes.Add(1)
				}
			}
		}()
	}
	for i := range rounds {
		d.causes.Or(1 << (i % queues))
		w.raise()
		time.Sleep(50 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	if wakes.Load() == 0 {
		t.Fatalf("no wake in %d interrupts", rounds)
	}
	if a := d.armedNow(); a != 0 {
		t.Errorf("armed %#x after every queue left", a)
	}
}
