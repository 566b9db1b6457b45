package netstack

import (
	"testing"
	"time"
)

// TestPacer walks the poll loop's decisions along a made-up clock: spin
// while traffic is recent, back off from MinWait to MaxWait, doze at
// IdleWait after IdleAfter, and start over on a frame or a wake-up.
func TestPacer(t *testing.T) {
	const us, ms = time.Microsecond, time.Millisecond
	o := Options{Spin: 500 * us, MinWait: 20 * us, MaxWait: ms, IdleAfter: 100 * ms, IdleWait: 20 * ms}.withDefaults()
	p := newPacer(o, 0)
	step := func(now, want time.Duration) {
		t.Helper()
		if got := p.idle(now); got != want {
			t.Fatalf("idle at %v: wait %v, want %v", now, got, want)
		}
	}
	// A loop starts as if a frame had just come: it spins first.
	step(0, 0)
	step(499*us, 0)
	// Then the back-off doubles up to MaxWait.
	for i, want := range []time.Duration{20 * us, 40 * us, 80 * us, 160 * us, 320 * us, 640 * us, ms, ms} {
		step(500*us+time.Duration(i)*ms, want)
	}
	// A frame: spinning again, and the back-off starts over after it.
	p.busy(50 * ms)
	step(50*ms+100*us, 0)
	step(51*ms, 20*us)
	step(52*ms, 40*us)
	// A wait the device ended restarts the back-off too.
	p.woken()
	step(53*ms, 20*us)
	// Long quiet: to the next multiple of IdleWait, which the loops of
	// an endpoint share, so that they wake together.
	step(150*ms, 10*ms)
	step(time.Hour, 20*ms)
	step(time.Hour+19990*us, 20*ms+10*us) // below MinWait: the tick after
	p.busy(time.Hour)
	step(time.Hour+time.Millisecond, 20*us)
}

// TestPacerOptions: spinning can be turned off, and IdleWait is never
// shorter than MaxWait.
func TestPacerOptions(t *testing.T) {
	o := Options{Spin: -1, MaxWait: 50 * time.Millisecond, IdleWait: time.Millisecond}.withDefaults()
	if o.IdleWait != o.MaxWait {
		t.Errorf("IdleWait %v below MaxWait %v", o.IdleWait, o.MaxWait)
	}
	p := newPacer(o, 0)
	if w := p.idle(0); w != o.MinWait {
		t.Errorf("spinning off: first idle waits %v, want MinWait %v", w, o.MinWait)
	}
	d := Options{}.withDefaults()
	if d.Spin <= 0 || d.IdleAfter <= d.Spin || d.IdleWait < d.MaxWait {
		t.Errorf("defaults: spin %v idle after %v idle wait %v max wait %v", d.Spin, d.IdleAfter, d.IdleWait, d.MaxWait)
	}
}

// TestPacerIdleTicksShared: idle loops whose last frames came at
// different times wake at the same instants of the shared clock.
func TestPacerIdleTicksShared(t *testing.T) {
	const ms = time.Millisecond
	o := Options{IdleAfter: ms, IdleWait: time.Second}.withDefaults()
	a, b := newPacer(o, 0), newPacer(o, 0)
	a.busy(100 * ms)
	b.busy(700 * ms)
	at := func(p *pacer, now time.Duration) time.Duration { return now + p.idle(now) }
	if ta, tb := at(&a, 200*ms), at(&b, 800*ms); ta != tb || ta != time.Second {
		t.Fatalf("idle loops wake at %v and %v, want both at %v", ta, tb, time.Second)
	}
	if ta, tb := at(&a, time.Second+3*ms), at(&b, time.Second+40*ms); ta != tb || ta != 2*time.Second {
		t.Fatalf("after the tick they wake at %v and %v, want both at %v", ta, tb, 2*time.Second)
	}
}
