package igb_test

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/wire"
)

// TestSimTxNoMaps: frames and TSO packets go out copied into the ring's
// bounce space, mapped once when the ring was made: no IOMMU map per
// packet, every frame on the wire with its own bytes, also when the
// model reads each descriptor's buffer only later (tx-deferred), so that
// a bounce slot reused before its descriptor is done shows.
func TestSimTxNoMaps(t *testing.T) {
	for _, tx := range testhost.TxModes {
		t.Run(tx.Name, func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{})
			peer := testhost.NewPeer(w.B())
			h := newHostWith(t, w.A(), 1, true, m82576.Options{DeferTx: tx.Defer, TxPerTouch: tx.PerTouch})
			testhost.CheckTxNoMaps(t, h.NIC, h.NIC.Queues()[0], peer, "tso on", func() uint64 { return h.IOMMUStats().Maps })
			h.Finish(t)
		})
	}
}
