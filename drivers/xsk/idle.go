package xsk

import (
	"runtime"
	"time"
)

// Idler paces an application loop that drives its own queue with
// Socket.Poll. After each round the loop calls Round with whether the round
// moved anything. An idle round yields the processor at once, so the
// goroutines that have work (other sockets, the sender) run next; after
// Spins idle rounds in a row the loop sleeps in Socket.Wait for up to
// Sleep. A loop that spins without yielding keeps the CPU for its whole
// scheduling slice: with one CPU, a queue that fills in a few
// milliseconds then waits for the slices of every idle loop.
type Idler struct {
	Socket *Socket
	Spins  int           // idle rounds before waiting; 0 waits at once
	Sleep  time.Duration // longest wait

	idle  int
	waits uint64
}

// Round records one loop round; worked is whether it received, sent or
// completed anything.
func (p *Idler) Round(worked bool) {
	if worked {
		p.idle = 0
		return
	}
	p.idle++
	if p.idle <= p.Spins {
		runtime.Gosched()
		return
	}
	p.waits++
	p.Socket.Wait(p.Sleep)
}

// Waits is how many times the loop slept in Socket.Wait.
func (p *Idler) Waits() uint64 { return p.waits }
