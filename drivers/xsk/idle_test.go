package xsk

import (
	"testing"
	"time"
)

func TestIdlerWaitsAfterSpins(t *testing.T) {
	s := newTestSocket(t)
	var waited []time.Duration
	s.SetWaiter(func(d time.Duration) bool { waited = append(waited, d); return false })
	p := &Idler{Socket: s, Spins: 3, Sleep: time.Millisecond}
	for _, worked := range []bool{false, false, false, false, false, true, false, false, false, false} {
		p.Round(worked)
	}
	// Rounds 4 and 5 are past the three spins; work resets the count, so
	// round 10 is the next wait.
	if len(waited) != 3 || p.Waits() != 3 {
		t.Fatalf("waited %d times (%d counted), want 3", len(waited), p.Waits())
	}
	for _, d := range waited {
		if d != time.Millisecond {
			t.Errorf("waited %v, want 1ms", d)
		}
	}
}

func TestWaitUnbound(t *testing.T) {
	s := newTestSocket(t)
	if s.Wait(time.Hour) {
		t.Fatal("an unbound socket reported work")
	}
	called := false
	s.SetWaiter(func(time.Duration) bool { called = true; return true })
	if !s.Wait(time.Millisecond) || !called {
		t.Fatal("the bound waiter was not used")
	}
	s.SetWaiter(nil)
	called = false
	if s.Wait(time.Millisecond) || called {
		t.Fatal("the waiter outlived the unbind")
	}
}

// newTestSocket is a socket on a umem of 8 frames, its rings 8 deep.
func newTestSocket(t *testing.T) *Socket {
	t.Helper()
	u, err := NewUmem(UmemConfig{Frames: 8})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSocket(u, 8)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
