package mi225

import (
	"fmt"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// State describes the interrupt registers and every queue's ring and
// waiting frames, with no side effect (nicmodel.FormatState).
func (n *NIC) State() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.regs
	irq := fmt.Sprintf("EIMS %#x EICR %#x IMS %#x ICR %#x GPIE %#x", r[nicmodel.EIMS/4], r[nicmodel.EICR/4], r[IMS/4], r[ICR/4], r[nicmodel.GPIE/4])
	var rings []nicmodel.RingState
	for q := range Queues {
		s := nicmodel.RingState{Queue: q, RDH: r[RxQ(RDH, q)/4], RDT: r[RxQ(RDT, q)/4], TDH: r[TxQ(TDH, q)/4], TDT: r[TxQ(TDT, q)/4]}
		if pb := n.pbq[q]; pb != nil {
			s.Waiting = pb.Len()
		}
		rings = append(rings, s)
	}
	return nicmodel.FormatState("mi225", irq, rings)
}
