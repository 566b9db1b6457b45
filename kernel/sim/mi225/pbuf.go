package mi225

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// packetBuffer is one queue's line in the receive packet buffer of
// Options.DeferRx. A frame is admitted and steered to its queue as it
// arrives, then waits in that queue's line until the driver's receive
// path for that queue next touches the device: reads RDH, RDT or RXDCTL
// of the queue, writes its RDT or RXDCTL, or writes EIMS with the bit the
// queue's IVAR entry names, arming its interrupt, or (outside MSI-X mode)
// EIMC with it, masking it as the woken loop goes to poll. That access moves the
// queue's frames into its ring on the driver's own goroutine, so the DMA
// into a ring is ordered with the reads of the goroutine that polls it,
// as an interrupt orders them on real hardware, and the race detector
// stays quiet with RSS spreading frames over several polled queues. No
// other register, the interrupt causes included, writes a ring. A frame
// that finds too few free descriptors stays at the head (counted once in
// RNBC) unless its queue has SRRCTL.DROP_EN; a frame that finds the
// buffer full is missed (MPC). The lines share the buffer's size.
type packetBuffer = nicmodel.PacketBuffer[rxAdmit]

// drainQueue moves queue q's waiting frames into its ring until none is
// left or the head frame finds too few descriptors. Other queues' frames
// stay where they are. quiet: the queue is being masked to be polled
// (rxAdmit.quiet).
func (n *NIC) drainQueue(q int, quiet bool) {
	pb := n.pbq[q]
	if pb == nil || pb.Len() == 0 {
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	pb.Drain(func(h *nicmodel.Held[rxAdmit]) bool {
		meta := h.Meta
		meta.quiet = quiet
		n.mu.Lock()
		if !n.deliverLocked(h.Frame, meta, &pb.Starved) {
			return false
		}
		n.pbUsed -= len(h.Frame)
		return true
	})
}

// drainQueues drains every queue whose bit is set in qs.
func (n *NIC) drainQueues(qs uint32, quiet bool) {
	for q := range Queues {
		if qs&(1<<q) != 0 {
			n.drainQueue(q, quiet)
		}
	}
}
