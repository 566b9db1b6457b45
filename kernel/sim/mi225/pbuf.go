package mi225

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// packetBuffer is the receive packet buffer of Options.DeferRx. Frames
// that passed the arrival checks wait here until the driver's receive path
// next touches the device (reads ICR, EICR, RDH or RXDCTL, writes RDT,
// RXDCTL, EIMS, IMS, EICS or ICS); that access moves them into the rings
// on the driver's own
// goroutine, so the DMA into a ring is ordered with the driver's reads of
// it, as a CPU observes a device, and the race detector stays quiet. A
// frame that finds too few free descriptors stays at the head (counted
// once in RNBC) unless its queue has SRRCTL.DROP_EN; a frame that finds
// the buffer full is missed (MPC).
type packetBuffer = nicmodel.PacketBuffer[rxAdmit]

// drainRx moves waiting frames into the rings until the buffer is empty
// or the head frame finds too few descriptors.
func (n *NIC) drainRx() {
	if n.pb == nil || n.pb.Len() == 0 {
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	n.pb.Drain(func(h *nicmodel.Held[rxAdmit]) bool {
		n.mu.Lock()
		return n.deliverLocked(h.Frame, h.Meta, true)
	})
}
