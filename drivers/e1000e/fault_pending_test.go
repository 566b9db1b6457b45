package e1000e

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/drivers/ring"
)

// A fault the poll sees before the device wrote the faulted descriptor
// back is not spent on an empty poll: the next frames are dropped.
func TestRxFaultBeforeWriteBackDropsNextFrames(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	r.DMA.Fault()
	if got := r.poll(); len(got) != 0 {
		t.Fatalf("%d frames from an empty ring", len(got))
	}
	frame := bytes.Repeat([]byte{5}, 300)
	r.complete(t, 0, nil, RXD_STAT_DD|RXD_STAT_EOP, len(frame)) // the faulted one, late
	if got := r.poll(); len(got) != 0 {
		t.Fatalf("%d frames delivered though a fault is pending", len(got))
	}
	if n := d.rx.Stats.Drops[ring.DropDMA].Load(); n != 1 {
		t.Errorf("rx_drop_dma %d, want 1", n)
	}
	r.complete(t, 1, frame, RXD_STAT_DD|RXD_STAT_EOP, len(frame))
	r.pollOne(t, frame, "after the fault was spent")
	r.Close(t)
}
