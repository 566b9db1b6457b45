package system

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ether9/ether9/netstack"
)

// TestWatchFaultsPace counts the fault watcher's reads: an idle machine
// must not be woken more than once per idle period, and polls that
// signal work, however many, bring at most one read per afterWork. Only
// upper bounds are asserted, which a loaded machine cannot break (it can
// only make fewer reads), and one lower bound with a deadline: work is
// followed by a read.
func TestWatchFaultsPace(t *testing.T) {
	const (
		idle      = 50 * time.Millisecond
		afterWork = 10 * time.Millisecond
		span      = 250 * time.Millisecond
	)
	t.Run("idle", func(t *testing.T) {
		var reads atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			watchFaults(ctx, func() uint64 { reads.Add(1); return 0 }, make(chan struct{}), nil, netstack.IdleTick{Epoch: time.Now(), Period: idle}, afterWork)
			close(done)
		}()
		start := time.Now()
		time.Sleep(span)
		cancel()
		<-done
		if n, max := reads.Load(), int64(time.Since(start)/idle)+1; n > max || n < 1 {
			t.Fatalf("%d reads in %v idle, want 1 to %d", n, time.Since(start), max)
		}
	})
	t.Run("busy", func(t *testing.T) {
		var reads atomic.Int64
		work := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			watchFaults(ctx, func() uint64 { reads.Add(1); return 0 }, work, nil, netstack.IdleTick{Epoch: time.Now(), Period: time.Hour}, afterWork)
			close(done)
		}()
		start := time.Now()
		signals := 0
		for time.Since(start) < span {
			select {
			case work <- struct{}{}:
				signals++
			default:
			}
			time.Sleep(100 * time.Microsecond)
		}
		elapsed := time.Since(start)
		// The read that follows the last signal, within a deadline.
		for deadline := time.Now().Add(5 * time.Second); reads.Load() < 2; {
			if time.Now().After(deadline) {
				t.Fatalf("%d signals of work, %d reads: work was not followed by a read", signals, reads.Load())
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-done
		if n, max := reads.Load(), int64(time.Since(start)/afterWork)+1; n > max {
			t.Fatalf("%d reads for %d signals in %v, want at most %d", n, signals, elapsed, max)
		}
	})
}
