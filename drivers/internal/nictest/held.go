package nictest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
)

// Packet is a received packet as its receiver holds it: its bytes as
// they are now, and its release.
type Packet struct {
	Bytes   func() []byte
	Release func()
}

// RxPacket holds the driver's packet p as a receiver would: released by
// offering its first view to p.Recycle, as the netstack endpoint does,
// then releasing its data.
func RxPacket(p *nic.RxPacket) Packet {
	return Packet{
		Bytes: p.Data.Flatten,
		Release: func() {
			if p.Recycle != nil {
				if vl := p.Data.AsViewList(); vl.Front() != nil {
					p.Recycle(vl.Front())
				}
			}
			p.Data.Release()
		},
	}
}

// What HeldRx.Check receives and holds.
const (
	heldPasses = 4  // rings' worth of frames received
	keepEvery  = 4  // every keepEvery-th packet is held to the end
	heldBatch  = 32 // frames the device receives between polls, at most half a ring
)

// heldDeadline bounds the wait for the goroutine that releases packets,
// so a release that blocks fails the test instead of hanging it.
const heldDeadline = time.Minute

// HeldRx plays one receive queue for Check.
type HeldRx struct {
	// Ring is the number of descriptors in the ring.
	Ring int
	// Send has the device receive f; false: it found no armed descriptor.
	Send func(t testing.TB, f []byte) bool
	// Receive has the driver take up to budget frames, each handed to got,
	// and returns how many it took.
	Receive func(t testing.TB, budget int, got func(Packet)) int
	// Frame is the i-th frame the device receives. Frames a ring apart
	// must differ, or a buffer re-armed under a held packet goes unseen.
	Frame func(i int) []byte
	// Want is what the i-th packet's Bytes must be; nil: Frame(i).
	Want func(i int) []byte
	// Close closes the driver once every packet is released, failing if
	// a DMA mapping is left.
	Close func(t testing.TB)
}

type heldPacket struct {
	i int
	p Packet
}

// Check receives heldPasses rings' worth of frames in batches while the
// receiver holds some of the packets: every keepEvery-th to the end (so
// the same descriptors each pass, where a page's two halves or a slot's
// old buffer meet a held packet), others handed to a goroutine that
// checks and releases them while the ring keeps receiving, the rest
// released within the poll. Every packet must hold its frame's bytes when
// it is let go: a buffer the device may write while the stack holds it
// shows up as a held packet whose bytes changed. Then Close.
func (h HeldRx) Check(t testing.TB) {
	t.Helper()
	want := h.Want
	if want == nil {
		want = h.Frame
	}
	total := heldPasses * h.Ring
	var kept []heldPacket
	later := make(chan heldPacket, total)
	released := make(chan string) // the goroutine's first complaint, "" if none
	go func() {
		bad := ""
		for k := range later {
			if msg := heldChanged(k.p.Bytes(), want(k.i)); msg != "" && bad == "" {
				bad = fmt.Sprintf("packet %d, released on another goroutine: %s", k.i, msg)
			}
			k.p.Release()
		}
		released <- bad
	}()
	closed := false
	defer func() {
		if !closed {
			close(later)
		}
	}()
	batch := max(1, min(heldBatch, h.Ring/2))
	got, sent := 0, 0
	take := func(p Packet) {
		i := got
		got++
		switch i % keepEvery {
		case 0:
			kept = append(kept, heldPacket{i, p})
		case keepEvery / 2:
			later <- heldPacket{i, p}
		default:
			if msg := heldChanged(p.Bytes(), want(i)); msg != "" {
				t.Errorf("packet %d, released at once: %s", i, msg)
			}
			p.Release()
		}
	}
	for sent < total {
		n := min(batch, total-sent)
		for range n {
			f := h.Frame(sent)
			if sent >= h.Ring && bytes.Equal(f, h.Frame(sent-h.Ring)) {
				t.Fatalf("frames %d and %d are alike: a re-armed buffer would go unseen", sent-h.Ring, sent)
			}
			if !h.Send(t, f) {
				t.Fatalf("frame %d: no armed descriptor (%d delivered, %d held)", sent, got, len(kept))
			}
			sent++
		}
		if took := h.Receive(t, n, take); took != n || got != sent {
			t.Fatalf("poll took %d of %d frames: %d delivered of %d sent, %d held", took, n, got, sent, len(kept))
		}
	}
	close(later)
	closed = true
	select {
	case bad := <-released:
		if bad != "" {
			t.Errorf("%s", bad)
		}
	case <-time.After(heldDeadline):
		t.Fatalf("packets handed to the releasing goroutine not released after %v (%d of %d delivered)", heldDeadline, got, total)
	}
	changed, first := 0, ""
	for _, k := range kept {
		if msg := heldChanged(k.p.Bytes(), want(k.i)); msg != "" {
			if changed++; first == "" {
				first = fmt.Sprintf("packet %d, held while %d more frames arrived: %s", k.i, total-1-k.i, msg)
			}
		}
		k.p.Release()
	}
	if changed != 0 {
		t.Errorf("%d of %d held packets changed under the ring; the first, %s", changed, len(kept), first)
	}
	h.Close(t)
}

// heldChanged says how got differs from want, "" when it does not.
func heldChanged(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			n := 0
			for j := i; j < len(got); j++ {
				if got[j] != want[j] {
					n++
				}
			}
			return fmt.Sprintf("%d bytes changed, the first at %d: %#02x, want %#02x", n, i, got[i], want[i])
		}
	}
	return ""
}
