package nicmodel

import (
	"fmt"
	"strings"
)

// RingState is one queue's ring registers and the frames waiting for it
// in the packet buffer (Options.DeferRx), as a model's State reports
// them.
type RingState struct {
	Queue              int
	RDH, RDT, TDH, TDT uint32
	Waiting            int
}

// FormatState is a model's State: the interrupt registers as irq
// names them, then each ring whose receive or transmit side is set up.
// A test that stopped making progress prints it: the driver cannot read
// these without changing them (a read of RDH drains a deferred queue).
func FormatState(model, irq string, rings []RingState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", model, irq)
	for _, r := range rings {
		fmt.Fprintf(&b, "; q%d RDH %d RDT %d TDH %d TDT %d waiting %d", r.Queue, r.RDH, r.RDT, r.TDH, r.TDT, r.Waiting)
	}
	return b.String()
}
