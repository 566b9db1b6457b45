package m82576

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// packetBuffer is the receive packet buffer: frames that passed the
// filters and were steered to a queue wait here, in arrival order, while
// their queue has no free descriptors (and SRRCTL.Drop_En is clear) or,
// with Options.DeferRx, until the driver next touches the receive path.
// Draining happens on the goroutine that touched the registers, so the
// DMA into a ring is ordered with that driver's reads of it, as one CPU
// observes its device. A frame that finds the buffer full is missed.
type packetBuffer = nicmodel.PacketBuffer[rxSetup]

// drainRx moves waiting frames into their rings until the buffer is empty
// or its oldest frame's queue is out of descriptors.
func (n *NIC) drainRx() {
	if n.pb.Len() == 0 {
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	for {
		h, ok := n.pb.Head()
		if !ok {
			return
		}
		h.Meta.pkt = parse(h.Frame, h.Meta.vet)
		if n.rxTry(h.Frame, &h.Meta) == rxNoRoom && n.rxNoRoom(h.Frame, &h.Meta, false) {
			n.pb.Starved = true
			return
		}
		n.pb.Pop()
	}
}

// The receive path's registers: an access to one of them moves waiting
// frames into the rings, before a read and after a write. Other registers
// leave the buffer alone, so a transmit or statistics thread never writes
// a ring the receive thread reads.
func drainsOnRead(off uint32) bool {
	if _, reg, ok := queueReg(off, RDBAL); ok {
		return reg == RDH || reg == RDT || reg == RXDCTL
	}
	return off == ICR || off == EICR
}

func drainsOnWrite(off uint32) bool {
	if _, reg, ok := queueReg(off, RDBAL); ok {
		return reg == RDT || reg == RXDCTL
	}
	return off == IMS || off == EIMS || off == ICS || off == EICS
}
