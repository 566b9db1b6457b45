package testhost

import (
	"bytes"
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel/sim/wire"
)

// Peer plays the far end of a host's wire: the test sends through it and
// it keeps every frame the NIC put on the wire.
type Peer struct {
	*wire.End
	mu   sync.Mutex
	seen [][]byte
}

// NewPeer starts collecting what arrives at end.
func NewPeer(end *wire.End) *Peer {
	p := &Peer{End: end}
	end.Receive(func(f []byte) {
		p.mu.Lock()
		p.seen = append(p.seen, bytes.Clone(f))
		p.mu.Unlock()
	})
	return p
}

// Frames are the frames received so far, oldest first.
func (p *Peer) Frames() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.seen...)
}

// Len is how many frames arrived.
func (p *Peer) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

// Reset forgets what arrived.
func (p *Peer) Reset() {
	p.mu.Lock()
	p.seen = nil
	p.mu.Unlock()
}

// Check compares the frames that arrived since the last Check (*checked
// counts those already compared) with want(i), what frame i should be,
// and fails the test at the first that differs.
func (p *Peer) Check(t testing.TB, checked *int, want func(i int) []byte) {
	t.Helper()
	seen := p.Frames()
	for ; *checked < len(seen); *checked++ {
		got, w := seen[*checked], want(*checked)
		if bytes.Equal(got, w) {
			continue
		}
		at := 0
		for at < min(len(got), len(w)) && got[at] == w[at] {
			at++
		}
		t.Fatalf("wire frame %d is not the frame queued: %d bytes, want %d, first difference at byte %d (its buffer reused or unmapped before the device read it?)", *checked, len(got), len(w), at)
	}
}
