package intr

import (
	"sync"
	"testing"
	"time"
)

// edgeWaiter is an interrupt line like the simulated machine's: raises
// collapse into one pending edge that one Wait takes.
type edgeWaiter struct{ ch chan struct{} }

func newEdge() edgeWaiter { return edgeWaiter{make(chan struct{}, 1)} }

func (w edgeWaiter) raise() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w edgeWaiter) Wait(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.ch:
		return true
	case <-t.C:
		return false
	}
}

// One interrupt wakes every loop that marked the line before it, however
// their sleeps and the interrupt interleave; with none, Wait times out.
func TestLineWakesEveryWaiter(t *testing.T) {
	w := newEdge()
	l := NewLine(w)
	if l.Wait(time.Millisecond, l.Mark()) {
		t.Fatal("woken with no interrupt")
	}
	const loops = 4
	for round := 0; round < 50; round++ {
		mark := l.Mark()
		woke := make(chan bool, loops)
		var wg sync.WaitGroup
		for range loops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				woke <- l.Wait(time.Minute, mark)
			}()
		}
		if round%2 == 0 {
			time.Sleep(time.Millisecond) // let some of them sleep first
		}
		w.raise()
		wg.Wait()
		close(woke)
		for ok := range woke {
			if !ok {
				t.Fatalf("round %d: a loop slept through the interrupt", round)
			}
		}
	}
}

// An interrupt another loop took between a loop's mark and its sleep is
// not lost: the late loop returns at once. A mark taken after it waits
// for the next one.
func TestLineMarkKeepsAnEarlierInterrupt(t *testing.T) {
	w := newEdge()
	l := NewLine(w)
	late := l.Mark()
	w.raise()
	if !l.Wait(time.Minute, l.Mark()) { // another loop takes the edge
		t.Fatal("the edge was not taken")
	}
	if !l.Wait(time.Minute, late) {
		t.Fatal("a loop marked before the interrupt slept through it")
	}
	if l.Wait(time.Millisecond, l.Mark()) {
		t.Fatal("a fresh mark woke without a new interrupt")
	}
}

// Without an interrupt source the line polls: Wait sleeps and reports no
// interrupt.
func TestLineNilWaiterPolls(t *testing.T) {
	l := NewLine(nil)
	if l.Wait(time.Millisecond, l.Mark()) {
		t.Fatal("a line without an interrupt reported one")
	}
}
