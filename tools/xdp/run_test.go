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

// Every program moves frames on every path with every NIC, and the rig closes with
// nothing mapped and no DMA fault (Run checks both).
func TestRunAll(t *testing.T) {
	if testing.Short() {
		t.Skip("runs eighteen simulated machines")
	}
	for _, n := range NICs() {
		for _, tc := range []Test{RxDrop, TxPush, L2Fwd} {
			for _, p := range []Path{Netstack, Copy, ZeroCopy} {
				r, err := Run(Config{NIC: n, Test: tc, Path: p, Size: 60, Duration: 100 * time.Millisecond})
				if err != nil {
					t.Fatalf("%s %v %v: %v", n, tc, p, err)
				}
				if r.Frames == 0 {
					t.Errorf("%s %v %v: no frames", n, tc, p)
				}
			}
		}
	}
}
