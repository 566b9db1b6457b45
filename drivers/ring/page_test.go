package ring

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// The page reuse rule rests on reading a view's reference count: it must
// follow Clone and Release.
func TestChunkRefsFollowClones(t *testing.T) {
	v := buffer.NewViewSize(kernel.PageSize)
	defer v.Release()
	if n, ok := chunkRefs(v); !ok || n != 1 {
		t.Fatalf("fresh view: %d refs (known %v)", n, ok)
	}
	a, b := v.Clone(), v.Clone()
	if n, _ := chunkRefs(v); n != 3 {
		t.Fatalf("two clones: %d refs", n)
	}
	a.Release()
	if n, _ := chunkRefs(v); n != 2 {
		t.Fatalf("one clone released: %d refs", n)
	}
	// A buffer holding the clone keeps the count until it is released.
	buf := buffer.MakeWithView(b)
	if n, _ := chunkRefs(v); n != 2 {
		t.Fatalf("clone in a buffer: %d refs", n)
	}
	buf.Release()
	if n, _ := chunkRefs(v); n != 1 {
		t.Fatalf("buffer released: %d refs", n)
	}
}

// One slot: the first handoff flips to the other half; a second handoff
// while the stack still holds the first half gives the page up, and the
// held frame stays intact.
func TestPageRxRingFlipAndGiveUp(t *testing.T) {
	dma := fakedev.NewDMA()
	r, err := NewPageRxRing(dma, 8, 16)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []kernel.DMAAddr
	r.Refill(func(i int, a kernel.DMAAddr) { addrs = append(addrs, a) })
	if len(addrs) != 7 || r.Pages.Allocs.Load() != 7 {
		t.Fatalf("armed %d, allocated %d", len(addrs), r.Pages.Allocs.Load())
	}
	recv := func(fill byte) buffer.Buffer {
		r.Refill(func(int, kernel.DMAAddr) {})
		// The slot at Clean: the address the ring armed for it.
		s := &r.slots[r.clean]
		a := s.Addr + kernel.DMAAddr(s.Off)
		if err := dma.DeviceWrite(a, bytes.Repeat([]byte{fill}, 1000)); err != nil {
			t.Fatal(err)
		}
		b, path, err := r.Receive(1000)
		if err != nil || path != Handoff {
			t.Fatalf("receive: %v %v", path, err)
		}
		r.Advance()
		return b
	}
	first := recv(1)
	if r.Pages.Flips.Load() != 1 || r.slots[0].Off != HalfPage {
		t.Fatalf("flips %d, slot 0 at offset %d", r.Pages.Flips.Load(), r.slots[0].Off)
	}
	first.Release()
	// Around the ring back to slot 0, now armed with its second half.
	for i := 1; i < 8; i++ {
		b := recv(byte(i + 1))
		b.Release()
	}
	held := []buffer.Buffer{recv(9)} // slot 0, second half; first half free: flips back
	if r.slots[0].Off != 0 || r.Pages.Flips.Load() != 9 {
		t.Fatalf("slot 0 offset %d, flips %d", r.slots[0].Off, r.Pages.Flips.Load())
	}
	for i := 1; i < 8; i++ {
		b := recv(byte(i + 20))
		b.Release()
	}
	held = append(held, recv(30)) // slot 0 again: its other half is still held
	if r.Pages.Released.Load() != 1 || r.slots[0].Page != nil {
		t.Fatalf("released %d, slot 0 page %v", r.Pages.Released.Load(), r.slots[0].Page)
	}
	if !bytes.Equal(held[0].Flatten(), bytes.Repeat([]byte{9}, 1000)) || !bytes.Equal(held[1].Flatten(), bytes.Repeat([]byte{30}, 1000)) {
		t.Fatal("held frames changed")
	}
	for _, b := range held {
		b.Release()
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := dma.Live(); n != 0 {
		t.Fatalf("%d mappings leaked", n)
	}
}

// A stack that holds its frames past a turn of the ring makes a slot give
// its page up; the ring then copies for a turn, for two after a second
// give-up that soon follows, and starts over after a turn of flips.
func TestPageRxRingHoldoff(t *testing.T) {
	dma := fakedev.NewDMA()
	const n = 8
	r, err := NewPageRxRing(dma, n, 16)
	if err != nil {
		t.Fatal(err)
	}
	var held []buffer.Buffer
	recv := func() Path {
		t.Helper()
		r.Refill(func(int, kernel.DMAAddr) {})
		s := &r.slots[r.clean]
		if err := dma.DeviceWrite(s.Half(), bytes.Repeat([]byte{7}, 1000)); err != nil {
			t.Fatal(err)
		}
		b, path, err := r.Receive(1000)
		if err != nil {
			t.Fatal(err)
		}
		r.Advance()
		held = append(held, b)
		return path
	}
	// want receives k frames, all going up by path p.
	want := func(k int, p Path, what string) {
		t.Helper()
		for i := range k {
			if got := recv(); got != p {
				t.Fatalf("%s: frame %d of %d went up %v, want %v (give-ups %d)", what, i, k, got, p, r.Pages.Released.Load())
			}
		}
	}
	release := func() {
		for _, b := range held {
			b.Release()
		}
		held = nil
	}
	want(n, Handoff, "first turn, both halves free")
	want(1, Handoff, "slot 0 again, its other half held: given up")
	want(n, Copied, "one turn of copies")
	want(1, Handoff, "a second give-up")
	want(2*n, Copied, "two turns of copies")
	if g := r.Pages.Released.Load(); g != 2 || r.Pages.Holdoffs.Load() != 2 {
		t.Fatalf("%d give-ups, %d copy periods, want 2 and 2", g, r.Pages.Holdoffs.Load())
	}
	release()
	want(n, Handoff, "the stack keeping up: a turn of flips")
	release()
	want(n, Handoff, "another turn, halves flipping back")
	want(1, Handoff, "held again past a turn: given up")
	want(n, Copied, "the period started over at one turn")
	release()
	want(1, Handoff, "and no longer")
	release()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := dma.Live(); n != 0 {
		t.Fatalf("%d mappings leaked", n)
	}
}
