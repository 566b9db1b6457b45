package m82574

import (
	"fmt"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// State describes the interrupt registers and the ring, with the frames
// waiting in the packet buffer, with no side effect
// (nicmodel.FormatState).
func (n *NIC) State() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.regs
	irq := fmt.Sprintf("IMS %#x ICR %#x", r[nicmodel.IMS/4], r[nicmodel.ICR/4])
	s := nicmodel.RingState{RDH: r[RDH/4], RDT: r[RDT/4], TDH: r[TDH/4], TDT: r[TDT/4]}
	if n.pb != nil {
		s.Waiting = n.pb.Len()
	}
	return nicmodel.FormatState("m82574", irq, []nicmodel.RingState{s})
}
