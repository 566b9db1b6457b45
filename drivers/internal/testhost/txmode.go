package testhost

import "testing"

// TxMode is when a NIC model does the transmit work a driver hands it,
// for tests that run over both: at the TDT write, or deferred
// (Options.DeferTx of each model) to the driver's later touches of the
// queue, PerTouch descriptors at a time. Deferred, the driver finds
// descriptors it handed over not yet done and the device reads each
// buffer only then, so a driver that reclaims a descriptor before its DD
// (a bounce buffer reused, a buffer unmapped) sends wrong bytes or takes
// a DMA fault.
type TxMode struct {
	Name     string
	Defer    bool
	PerTouch int
}

// TxModes are the two modes. Three descriptors per touch cut most
// packets (a context, a header and the data) across touches.
var TxModes = []TxMode{
	{Name: "tx-at-doorbell"},
	{Name: "tx-deferred", Defer: true, PerTouch: 3},
}

// SkipRacy skips a test in the deferred mode under the race detector
// when the driver's packets are also reclaimed on a goroutine other than
// the poll loop's, as the netstack's sender does while its ring is full:
// the model writes DD back on the poll loop's goroutine when its re-arm
// touches the queue (see nicmodel.TxDefer), and nothing orders that with
// the sender's read.
func (m TxMode) SkipRacy(t testing.TB) {
	if m.Defer && raceOn {
		t.Skip("deferred transmit with a second reclaiming goroutine: the model's DD write-backs race its reads")
	}
}
