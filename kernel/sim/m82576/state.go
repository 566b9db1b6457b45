package m82576

import (
	"fmt"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// State describes the interrupt registers and each queue whose ring is
// set up, with its waiting frames, with no side effect
// (nicmodel.FormatState).
func (n *NIC) State() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.regs
	irq := fmt.Sprintf("EIMS %#x EICR %#x IMS %#x ICR %#x GPIE %#x", r[nicmodel.EIMS/4], r[nicmodel.EICR/4], r[nicmodel.IMS/4], r[nicmodel.ICR/4], r[nicmodel.GPIE/4])
	var rings []nicmodel.RingState
	for q := range numQueues {
		at := func(reg uint32) uint32 { return r[(reg+queueSize*uint32(q))/4] }
		if at(RDLEN) == 0 && at(TDLEN) == 0 {
			continue
		}
		s := nicmodel.RingState{Queue: q, RDH: at(RDH), RDT: at(RDT), TDH: at(TDH), TDT: at(TDT)}
		if pb := n.pbq[q]; pb != nil {
			s.Waiting = pb.Len()
		}
		rings = append(rings, s)
	}
	return nicmodel.FormatState("m82576", irq, rings)
}
