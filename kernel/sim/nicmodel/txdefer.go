package nicmodel

import "fmt"

// TxDefer is the deferred transmit of the models' Options.DeferTx. A TDT
// write then only records the new tail: the queue's engine fetches and
// processes the descriptors later, when the driver next touches the
// queue (which accesses count is each model's: the queue's own transmit
// registers, and the interrupt re-arm of its poll loop), at most PerTouch
// of them per touch. The engine so runs beside the driver, as the card
// does: the driver routinely finds descriptors it handed over that are
// not done yet, and reads each buffer only when it processes its
// descriptor, so a driver that reuses a bounce buffer or unmaps a
// buffer before DD sends the wrong bytes or takes a DMA fault.
//
// A touch runs the engine on the goroutine that touched, so the
// write-backs are ordered, for the race detector, with the reads of that
// goroutine and of any that later takes a lock it released. The re-arm
// is the poll loop's, not the transmit path's: it must count, or a
// driver that reclaims by reading DD in memory, touching nothing, would
// wait for its next send, but a reclaim on another goroutine that meets
// its write-backs unordered (the netstack's sender waiting on a full
// ring) is reported as a race, though on hardware the device writes DD
// on its own time anyway.
type TxDefer struct {
	On bool
	// PerTouch is the most descriptors one touch processes; zero means
	// every one handed over before the touch.
	PerTouch uint32
}

// NewTxDefer checks a model's DeferTx options; family names the model in
// the error.
func NewTxDefer(family string, on bool, perTouch int) (TxDefer, error) {
	if perTouch < 0 {
		return TxDefer{}, fmt.Errorf("%s: %d transmit descriptors per touch", family, perTouch)
	}
	return TxDefer{On: on, PerTouch: uint32(perTouch)}, nil
}
