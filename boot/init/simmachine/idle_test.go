package simmachine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// stamps records when the machine touched a device register: every
// wake-up of an idle machine (a poll loop's timeout, the fault watcher's
// read) touches one.
type stamps struct {
	mu sync.Mutex
	at []time.Time
}

func (s *stamps) add() {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
}

// since returns the accesses after t.
func (s *stamps) since(t time.Time) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, a := range s.at {
		if a.After(t) {
			out = append(out, a)
		}
	}
	return out
}

// stampRegs is a register window that records each access.
type stampRegs struct {
	r kernel.Regs
	s *stamps
}

func (r stampRegs) Read32(off uint32) uint32     { r.s.add(); return r.r.Read32(off) }
func (r stampRegs) Read64(off uint32) uint64     { r.s.add(); return r.r.Read64(off) }
func (r stampRegs) Write32(off uint32, v uint32) { r.s.add(); r.r.Write32(off, v) }
func (r stampRegs) Write64(off uint32, v uint64) { r.s.add(); r.r.Write64(off, v) }

// bursts groups accesses less than gap apart: one burst per wake-up.
func bursts(at []time.Time, gap time.Duration) []time.Time {
	var out []time.Time
	for i, a := range at {
		if i == 0 || a.Sub(at[i-1]) >= gap {
			out = append(out, a)
		}
	}
	return out
}

// TestIdleWakesOncePerTick: an idle machine with an igb (four queue
// loops on one INTx) and a VT-d unit touches its devices in at most one
// burst per idle tick: the loops' timeouts and the fault watcher's reads
// share the tick. The tick's epoch is set half a second before Start, so
// that a timer running on its own phase (counted from when its goroutine
// began) is half a period off the others and shows as a second burst.
// The idle windows counted are those in which the wire carried no frame
// (traffic wakes the machine by right: the stack's router solicitations
// go out 4 s apart for its first 12 s); the machine's interrupt waits
// last their whole timeout in real time, as on hardware. With the fault
// watcher on a ticker of its own, or the loops' clock counted from their
// start, a window holds four bursts.
func TestIdleWakesOncePerTick(t *testing.T) {
	const (
		window = 2 * time.Second
		gap    = 100 * time.Millisecond // accesses of one wake-up are closer
		tries  = 5
	)
	con := &console{}
	h, err := New(context.Background(), Config{NICs: []string{"igb"}, Logf: con.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rec := &stamps{}
	plat := Platform(h.Machine)
	mapUnit, mapBAR := plat.MapUnit, plat.MapBAR
	plat.MapUnit = func(base uint64) (kernel.Regs, error) {
		r, err := mapUnit(base)
		if err != nil {
			return nil, err
		}
		return stampRegs{r, rec}, nil
	}
	plat.MapBAR = func(f *pci.Function, bar int) (kernel.Regs, error) {
		r, err := mapBAR(f, bar)
		if err != nil {
			return nil, err
		}
		return stampRegs{r, rec}, nil
	}
	plat.IRQ = func(a pci.Addr) kernel.Waiter {
		q := h.Machine.IRQ(a)
		q.SetRealWait(time.Hour)
		return q
	}
	plat.MSI = nil // the loops on one line, not on vectors of their own
	opt := Options(1)
	opt.Ping = false
	opt.IdleEpoch = time.Now().Add(-time.Second / 2)
	sys, err := system.Start(h.Context(), plat, opt, con.logf)
	if err != nil {
		t.Fatalf("boot: %v\n%s", err, con.text())
	}
	h.System = sys
	con.waitFor(t, "ether0 irq: sim INTx")
	time.Sleep(1500 * time.Millisecond) // the stack's start-up traffic
	var report []string
	for range tries {
		a0, b0 := h.Wire.Stats()
		start := time.Now()
		time.Sleep(window)
		a1, b1 := h.Wire.Stats()
		got := bursts(rec.since(start), gap)
		var phases []string
		for _, b := range got {
			phases = append(phases, fmt.Sprintf("%.3f", b.Sub(start).Seconds()))
		}
		line := fmt.Sprintf("%d bursts in %v (at %s s), frames %d/%d", len(got), window, strings.Join(phases, " "), a1.Frames-a0.Frames, b1.Frames-b0.Frames)
		report = append(report, line)
		if a1.Frames != a0.Frames || b1.Frames != b0.Frames {
			continue // traffic in the window: try another
		}
		// One per tick: the window holds window/tick of them, and
		// one more when it starts just before a tick.
		if max := int(window/time.Second) + 1; len(got) > max || len(got) == 0 {
			t.Fatalf("idle: %s, want 1 to %d\n%s", line, max, con.text())
		}
		t.Log(strings.Join(report, "\n"))
		return
	}
	t.Fatalf("no idle window without frames on the wire in %d tries:\n%s", tries, strings.Join(report, "\n"))
}
