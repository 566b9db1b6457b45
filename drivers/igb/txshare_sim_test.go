package igb_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// TestSimTxSharedChunk: frames whose data overlap in one chunk are all
// mapped at once and all reach the wire with their own bytes.
func TestSimTxSharedChunk(t *testing.T) {
	w := testhost.Wire(t, wire.Options{})
	peer := testhost.NewPeer(w.B())
	h := newHost(t, w.A(), 1, false)
	testhost.CheckTxSharedChunk(t, h.NIC.Queues()[0], peer)
	if n := h.Stat(t, "tx_map_failures"); n != 0 {
		t.Errorf("tx_map_failures %d", n)
	}
	h.Close(t)
	h.checkClosed(t)
}
