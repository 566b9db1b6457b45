package nicmodel

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

func TestPacketBuffer(t *testing.T) {
	p := NewPacketBuffer[int](3000)
	f := bytes.Repeat([]byte{0xab}, 1000)
	for i := range 3 {
		if !p.Push(f, i) {
			t.Fatalf("frame %d refused below the limit", i)
		}
	}
	if p.Push([]byte{1}, 9) {
		t.Fatal("a byte past the limit was kept")
	}
	f[0] = 0 // the buffer holds a copy
	h, ok := p.Head()
	if !ok || h.Meta != 0 || h.Frame[0] != 0xab || len(h.Frame) != 1000 {
		t.Fatalf("head %v %v", h, ok)
	}
	p.Starved = true
	p.Pop()
	if p.Starved || p.Len() != 2 {
		t.Fatalf("after pop: starved %v, %d held", p.Starved, p.Len())
	}
	if !p.Push(make([]byte, 1000), 3) {
		t.Fatal("the popped frame's room was not given back")
	}
	for want := 1; want <= 3; want++ {
		h, ok := p.Head()
		if !ok || h.Meta != want {
			t.Fatalf("head %v, want meta %d in arrival order", h, want)
		}
		p.Pop()
	}
	if _, ok := p.Head(); ok || p.Len() != 0 {
		t.Fatal("buffer not empty")
	}
	p.Push(f, 7)
	p.Reset()
	if p.Len() != 0 || !p.Push(make([]byte, 3000), 8) {
		t.Fatal("reset did not free the room")
	}
}

func TestPacketBufferConcurrent(t *testing.T) {
	p := NewPacketBuffer[int](1 << 20)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				p.Push([]byte{byte(w), byte(i)}, w)
			}
		}()
	}
	got := 0
	for got < 400 {
		if h, ok := p.Head(); ok {
			if int(h.Frame[0]) != h.Meta {
				t.Fatalf("frame from %d carries meta %d", h.Frame[0], h.Meta)
			}
			p.Pop()
			got++
		}
	}
	wg.Wait()
}

func TestPacketBufferDrain(t *testing.T) {
	p := NewPacketBuffer[int](10000)
	for i := range 5 {
		p.Push([]byte{byte(i)}, i)
	}
	var took []int
	p.Drain(func(h *Held[int]) bool {
		if h.Meta == 3 {
			return false // no room for this one
		}
		took = append(took, h.Meta)
		return true
	})
	if fmt.Sprint(took) != "[0 1 2]" || p.Len() != 2 {
		t.Fatalf("took %v, %d left", took, p.Len())
	}
	if h, _ := p.Head(); h.Meta != 3 {
		t.Fatalf("head %d, want the refused frame", h.Meta)
	}
	took = nil
	p.Drain(func(h *Held[int]) bool { took = append(took, h.Meta); return true })
	if fmt.Sprint(took) != "[3 4]" || p.Len() != 0 {
		t.Fatalf("second drain took %v, %d left", took, p.Len())
	}
}
