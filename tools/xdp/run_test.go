//go:build !race

package xdp

import (
	"testing"
	"time"
)

// The generator runs on its own goroutine and the 82576 model writes
// descriptors on it while the driver polls on another: real DMA, which
// the race detector reports on the shared ring memory. So this runs
// without -race.

// Every program moves frames on every path, and the rig closes with
// nothing mapped and no DMA fault (Run checks both).
func TestRunAll(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nine simulated machines")
	}
	for _, tc := range []Test{RxDrop, TxPush, L2Fwd} {
		for _, p := range []Path{Netstack, Copy, ZeroCopy} {
			r, err := Run(Config{Test: tc, Path: p, Size: 60, Duration: 100 * time.Millisecond})
			if err != nil {
				t.Fatalf("%v %v: %v", tc, p, err)
			}
			if r.Frames == 0 {
				t.Errorf("%v %v: no frames", tc, p)
			}
		}
	}
}
