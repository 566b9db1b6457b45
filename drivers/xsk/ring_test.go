package xsk

import (
	"errors"
	"sync"
	"testing"
)

func TestRingBounds(t *testing.T) {
	for _, n := range []int{0, 1, 3, 100, 1 << 21} {
		if _, err := NewRing[uint64](n); err == nil {
			t.Errorf("ring of %d accepted", n)
		}
	}
	r, err := NewRing[uint64](4)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.ProduceBatch([]uint64{1, 2, 3, 4, 5}); n != 4 || r.Free() != 0 || r.Produce(6) {
		t.Fatalf("batch %d, free %d", n, r.Free())
	}
	out := make([]uint64, 8)
	if n := r.ConsumeBatch(out); n != 4 || out[0] != 1 || out[3] != 4 {
		t.Fatalf("consumed %d: %v", n, out)
	}
	if _, ok := r.Consume(); ok {
		t.Fatal("consumed from an empty ring")
	}
}

// One producer and one consumer goroutine, no lock: every value arrives
// once, in order (run with -race).
func TestRingConcurrent(t *testing.T) {
	r, _ := NewRing[Desc](64)
	const n = 20000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(0); i < n; {
			if r.Produce(Desc{Addr: i, Len: uint32(i)}) {
				i++
			}
		}
	}()
	for want := uint64(0); want < n; {
		d, ok := r.Consume()
		if !ok {
			continue
		}
		if d.Addr != want || d.Len != uint32(want) {
			t.Fatalf("got %+v, want %d", d, want)
		}
		want++
	}
	wg.Wait()
}

func TestUmemCheck(t *testing.T) {
	u, err := NewUmem(UmemConfig{Frames: 8})
	if err != nil {
		t.Fatal(err)
	}
	if u.Frames() != 8 || u.Fill.Size() != 8 || u.Comp.Size() != 8 {
		t.Fatalf("frames %d fill %d comp %d", u.Frames(), u.Fill.Size(), u.Comp.Size())
	}
	good := []struct {
		a uint64
		n int
	}{{0, 2048}, {2048, 60}, {7 * 2048, 2048}}
	for _, c := range good {
		if err := u.Check(c.a, c.n); err != nil {
			t.Errorf("Check(%d, %d): %v", c.a, c.n, err)
		}
	}
	bad := []struct {
		a uint64
		n int
	}{{8 * 2048, 1}, {100, 2000}, {0, 2049}, {0, -1}, {1 << 62, 1}}
	for _, c := range bad {
		if err := u.Check(c.a, c.n); !errors.Is(err, ErrBadFrame) {
			t.Errorf("Check(%d, %d) = %v", c.a, c.n, err)
		}
	}
	if _, err := NewUmem(UmemConfig{FrameSize: 1000}); err == nil {
		t.Error("1000-byte frames accepted")
	}
}
