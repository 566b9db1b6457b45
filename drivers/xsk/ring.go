// Package xsk lets an application take over a NIC's RX/TX queue pair and
// move frames without the TCP/IP stack, in the shape of Linux's AF_XDP: a
// frame area (UMEM) registered once, a fill ring of free frames the
// application gives the driver, an RX ring of received frames, a TX ring
// of frames to send and a completion ring of frames the driver is done
// with. In zero-copy mode the NIC DMAs straight into the application's
// frames and transmits straight out of them; in copy mode the driver
// copies between its own buffers and the frames. A per-queue Program
// decides, before the stack sees a frame, whether it goes to the stack,
// is dropped, is sent back out, or is redirected to the queue's socket.
//
// Drivers implement Binder. Everything that is not about one device lives
// here: the rings and frame area, and Queue, the socket side of a queue
// pair (the program, the zero-copy RX ring armed from the fill ring,
// copy-mode delivery, sends and their completions, giving every frame
// back at unbind), which a driver runs through the small Hw interface of
// its register programming and descriptor formats.
package xsk

import (
	"fmt"
	"sync/atomic"
)

// Ring is a single-producer, single-consumer ring of n (a power of two)
// entries: one goroutine produces, one consumes, with no lock. The
// producer and consumer indexes run free and wrap at 2^64.
type Ring[T any] struct {
	prod atomic.Uint64
	_    [56]byte // keep the two indexes on separate cache lines
	cons atomic.Uint64
	_    [56]byte
	mask uint64
	buf  []T
}

// NewRing returns an empty ring of n entries.
func NewRing[T any](n int) (*Ring[T], error) {
	if n < 2 || n&(n-1) != 0 || n > 1<<20 {
		return nil, fmt.Errorf("xsk: ring of %d entries: want a power of two from 2 to %d", n, 1<<20)
	}
	return &Ring[T]{mask: uint64(n - 1), buf: make([]T, n)}, nil
}

// Size is the ring's capacity.
func (r *Ring[T]) Size() int { return len(r.buf) }

// Len is the number of entries waiting for the consumer.
func (r *Ring[T]) Len() int { return int(r.prod.Load() - r.cons.Load()) }

// Free is the number of entries the producer may add.
func (r *Ring[T]) Free() int { return len(r.buf) - r.Len() }

// Produce adds v and reports whether there was room.
func (r *Ring[T]) Produce(v T) bool {
	p := r.prod.Load()
	if p-r.cons.Load() == uint64(len(r.buf)) {
		return false
	}
	r.buf[p&r.mask] = v
	r.prod.Store(p + 1)
	return true
}

// ProduceBatch adds as many of vs as fit and returns how many.
func (r *Ring[T]) ProduceBatch(vs []T) int {
	p := r.prod.Load()
	n := min(len(vs), len(r.buf)-int(p-r.cons.Load()))
	for i := 0; i < n; i++ {
		r.buf[(p+uint64(i))&r.mask] = vs[i]
	}
	r.prod.Store(p + uint64(n))
	return n
}

// Consume takes the oldest entry.
func (r *Ring[T]) Consume() (T, bool) {
	c := r.cons.Load()
	if c == r.prod.Load() {
		var zero T
		return zero, false
	}
	v := r.buf[c&r.mask]
	r.cons.Store(c + 1)
	return v, true
}

// ConsumeBatch takes up to len(vs) entries into vs and returns how many.
func (r *Ring[T]) ConsumeBatch(vs []T) int {
	c := r.cons.Load()
	n := min(len(vs), int(r.prod.Load()-c))
	for i := 0; i < n; i++ {
		vs[i] = r.buf[(c+uint64(i))&r.mask]
	}
	r.cons.Store(c + uint64(n))
	return n
}
