package igb_test

import (
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// TestSimInjectUnmappedRx: a frame the 82576 model wrote into an
// unmapped IOVA, its descriptor still written back done, is dropped and
// counted, not delivered with what the buffer held before; the ring
// carries on (testhost.CheckInjectUnmappedRx).
func TestSimInjectUnmappedRx(t *testing.T) {
	for _, nc := range []bool{false, true} {
		t.Run(fmt.Sprintf("noncoherent=%v", nc), func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{})
			h := newHost(t, w.A(), 1, nc)
			h.CheckInjectUnmappedRx(t, 256, w.B().Send) // the driver's ring size
		})
	}
}
