package nictest

import (
	"encoding/binary"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ether9/ether9/drivers/internal/failtest"
)

// fakeRing hands its buffers up as packets; with rearm it keeps each in
// its slot for the next frame, as a driver must not. mu keeps the
// device's writes and the receiver's reads apart.
type fakeRing struct {
	mu          sync.Mutex
	bufs        [][]byte
	lens        []int
	head, clean int
	rearm       bool
	released    atomic.Int64
}

func newFakeRing(n int, rearm bool) *fakeRing {
	r := &fakeRing{bufs: make([][]byte, n), lens: make([]int, n), rearm: rearm}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, 2048)
	}
	return r
}

func (r *fakeRing) held() HeldRx {
	n := len(r.bufs)
	return HeldRx{
		Ring: n,
		Send: func(_ testing.TB, f []byte) bool {
			if r.head-r.clean == n {
				return false
			}
			r.mu.Lock()
			r.lens[r.head%n] = copy(r.bufs[r.head%n], f)
			r.mu.Unlock()
			r.head++
			return true
		},
		Receive: func(_ testing.TB, budget int, got func(Packet)) int {
			k := 0
			for ; k < budget && r.clean < r.head; k++ {
				s := r.clean % n
				b := r.bufs[s][:r.lens[s]]
				if !r.rearm {
					r.bufs[s] = make([]byte, 2048)
				}
				bytes := func() []byte {
					r.mu.Lock()
					defer r.mu.Unlock()
					return append([]byte(nil), b...)
				}
				got(Packet{Bytes: bytes, Release: func() { r.released.Add(1) }})
				r.clean++
			}
			return k
		},
		Frame: func(i int) []byte {
			f := make([]byte, 100)
			binary.BigEndian.PutUint32(f, uint32(i))
			return f
		},
		Close: func(t testing.TB) {
			if got := r.released.Load(); got != int64(r.clean) {
				t.Errorf("%d of %d packets released", got, r.clean)
			}
		},
	}
}

func TestHeldRx(t *testing.T) {
	newFakeRing(16, false).held().Check(t)

	errs := failtest.Run(newFakeRing(16, true).held().Check)
	if !strings.Contains(strings.Join(errs, "\n"), "12 of 16 held packets changed under the ring; the first, packet 0, held while 63 more frames arrived: 1 bytes changed, the first at 3") {
		t.Errorf("a buffer re-armed under a held packet: %q", errs)
	}

	alike := newFakeRing(16, false).held()
	alike.Frame = func(i int) []byte { return make([]byte, 100) }
	if msg := failtest.First(alike.Check); !strings.Contains(msg, "alike") {
		t.Errorf("frames a ring apart alike: %q", msg)
	}

	full := newFakeRing(16, false).held()
	poll := full.Receive
	full.Receive = func(t testing.TB, budget int, got func(Packet)) int { return poll(t, budget/2, got) }
	if msg := failtest.First(full.Check); !strings.Contains(msg, "poll took 4 of 8") {
		t.Errorf("a poll that takes half: %q", msg)
	}
}
