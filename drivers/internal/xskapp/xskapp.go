// Package xskapp is the application side of an xsk socket for the
// drivers' tests: a umem and socket, the frames the application holds,
// and the check that after an unbind every frame is in exactly one place.
// It knows no device, so a driver's own tests, inside its package, and
// its tests on a simulated machine use it alike.
package xskapp

import (
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/xsk"
)

// Modes are the two ways a queue serves a socket.
var Modes = []xsk.Mode{xsk.Copy, xsk.ZeroCopy}

// App is a test application: its socket and the frames it holds.
type App struct {
	S    *xsk.Socket
	Free []uint64
}

// New makes a umem of frames frames, a socket whose rings hold ring
// descriptors, and gives fill of the frames to the fill ring.
func New(t testing.TB, frames, fill, ring int) *App {
	t.Helper()
	u, err := xsk.NewUmem(xsk.UmemConfig{Frames: frames})
	if err != nil {
		t.Fatal(err)
	}
	s, err := xsk.NewSocket(u, ring)
	if err != nil {
		t.Fatal(err)
	}
	a := &App{S: s}
	for i := range frames {
		a.Free = append(a.Free, u.Frame(i))
	}
	a.Fill(fill)
	return a
}

// Fill gives up to n free frames to the driver.
func (a *App) Fill(n int) {
	n = min(n, len(a.Free))
	k := a.S.Umem.Fill.ProduceBatch(a.Free[:n])
	a.Free = a.Free[k:]
}

// RX takes the received frames, each checked to lie in the umem.
func (a *App) RX(t testing.TB) []xsk.Desc {
	t.Helper()
	var out []xsk.Desc
	for {
		d, ok := a.S.RX.Consume()
		if !ok {
			return out
		}
		if err := a.S.Umem.Check(d.Addr, int(d.Len)); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
}

// Recycle takes the received frames without reading them and gives every
// free frame back to the fill ring, as an rxdrop application does.
func (a *App) Recycle(t testing.TB) {
	t.Helper()
	for _, d := range a.RX(t) {
		a.Free = append(a.Free, d.Addr)
	}
	a.Fill(len(a.Free))
}

// IdleRounds is how many rounds in a row an application's loop may move
// nothing before Idle calls it stuck; each waits a millisecond at most.
const IdleRounds = 1000

// Idle is the application's poll(2) after a round of its loop that moved
// nothing, *idle counting such rounds in a row (the loop zeroes it when
// a round moves something): it sleeps on the socket's queue, which
// re-arms the queue's vector and so also lets a NIC model that defers
// transmit (DeferTx) go on with the queue's descriptors. After
// IdleRounds such rounds the test fails with what stuck describes and
// the socket's counts.
func (a *App) Idle(t testing.TB, idle *int, stuck func() string) {
	t.Helper()
	if *idle++; *idle > IdleRounds {
		t.Fatalf("stuck after %d idle rounds: %s; socket: %d sent, %d completions waiting", IdleRounds, stuck(), a.S.Stats.TxSent.Load(), a.S.Umem.Comp.Len())
	}
	a.S.Wait(time.Millisecond)
}

// Complete takes finished frames back and says how many.
func (a *App) Complete() int {
	n := 0
	for {
		f, ok := a.S.Umem.Comp.Consume()
		if !ok {
			return n
		}
		a.Free = append(a.Free, f)
		n++
	}
}

// Account checks, once the queue is unbound, that every frame is in
// exactly one place: free, held by the application, or on a ring it
// consumes; and that no completion was lost to a full ring.
func (a *App) Account(t testing.TB, held []xsk.Desc) {
	t.Helper()
	seen := map[uint64]string{}
	add := func(f uint64, where string) {
		if w, ok := seen[f]; ok {
			t.Fatalf("frame %#x twice (%s, %s)", f, w, where)
		}
		seen[f] = where
	}
	for _, f := range a.Free {
		add(f, "free")
	}
	for _, d := range held {
		add(d.Addr, "held")
	}
	for _, d := range a.RX(t) {
		add(d.Addr, "rx")
	}
	for {
		f, ok := a.S.Umem.Comp.Consume()
		if !ok {
			break
		}
		add(f, "completion")
	}
	for {
		f, ok := a.S.Umem.Fill.Consume()
		if !ok {
			break
		}
		add(f, "fill")
	}
	if len(seen) != a.S.Umem.Frames() {
		t.Fatalf("%d of %d frames accounted for", len(seen), a.S.Umem.Frames())
	}
	if n := a.S.Stats.CompOverflow.Load(); n != 0 {
		t.Fatalf("%d frames overflowed the completion ring", n)
	}
}
