package m82574

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// packetBuffer is the receive packet buffer of Options.DeferRx: frames
// that passed the filters wait here until the driver's receive path next
// reads ICR or RDH or writes RDT, which moves them into the ring on the
// driver's own goroutine. The DMA
// into the ring is then ordered with the driver's reads of it, as one CPU
// observes a device, and the race detector stays quiet. A frame that finds
// too few free descriptors stays at the head (counted once in RNBC); a
// frame that finds the buffer full is missed (MPC).
type packetBuffer = nicmodel.PacketBuffer[struct{}]

// drainRx moves waiting frames into the ring until it is empty or the
// ring has too few free descriptors.
func (n *NIC) drainRx() {
	if n.pb == nil || n.pb.Len() == 0 {
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	n.pb.Drain(func(h *nicmodel.Held[struct{}]) bool {
		if n.rxFrame(h.Frame) {
			return true
		}
		if !n.pb.Starved {
			n.pb.Starved = true
			n.mu.Lock()
			nicmodel.AddStat(n.regs[:], nicmodel.RNBC, 1)
			n.mu.Unlock()
		}
		return false
	})
}
