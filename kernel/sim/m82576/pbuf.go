package m82576

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// packetBuffer is the receive packet buffer: frames that passed the
// filters and were steered to a queue wait here, in arrival order, while
// their queue has no free descriptors (and SRRCTL.Drop_En is clear). With
// Options.DeferRx every frame waits, in its own queue's line, until the
// driver next touches that queue's receive registers. Draining happens on
// the goroutine that touched the registers, so the DMA into a ring is
// ordered with that driver's reads of it, as one CPU observes its device.
// A frame that finds the buffer full is missed.
type packetBuffer = nicmodel.PacketBuffer[rxSetup]

// drainRx moves waiting frames into their rings until the buffer is empty
// or its oldest frame's queue is out of descriptors.
func (n *NIC) drainRx() { n.drain(n.pb, false) }

// drainQueue moves queue q's deferred frames into its ring until none is
// left or the queue is out of descriptors. Other queues' frames stay: a
// queue's ring is written only on the goroutine that looks at that queue.
// quiet: the queue is being masked to be polled (rxSetup.quiet).
func (n *NIC) drainQueue(q uint32, quiet bool) { n.drain(n.pbq[q], quiet) }

func (n *NIC) drain(pb *packetBuffer, quiet bool) {
	if pb.Len() == 0 {
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	pb.Drain(func(h *nicmodel.Held[rxSetup]) bool {
		// A copy: the held entry is shared with Push, which may move it.
		meta := h.Meta
		meta.pkt = nicmodel.Parse(h.Frame, meta.vet)
		meta.quiet = quiet
		if n.rxTry(h.Frame, &meta) == rxNoRoom && n.rxNoRoom(pb, h.Frame, &meta, false) {
			pb.Starved = true
			return false
		}
		if pb != n.pb {
			n.deferred.Add(-int64(len(h.Frame)))
		}
		return true
	})
}

// rxAccess moves waiting frames into the rings for an access to the
// register at off: before a read, after a write. With DeferRx only queue
// N's RDH, RDT and RXDCTL move queue N's frames; the interrupt registers
// never write a ring. Otherwise any receive path register drains the one
// buffer in arrival order. Other registers leave the buffer alone, so a
// transmit or statistics thread never writes a ring a receive thread
// reads.
func (n *NIC) rxAccess(off uint32, write bool) {
	if !n.opt.DeferRx {
		if write && drainsOnWrite(off) || !write && drainsOnRead(off) {
			n.drainRx()
		}
		return
	}
	if q, reg, ok := queueReg(off, RDBAL); ok && (reg == RDT || reg == RXDCTL || !write && reg == RDH) {
		n.drainQueue(q, false)
	}
}

// The receive path's registers of the one buffer: queue registers and the
// interrupt causes.
func drainsOnRead(off uint32) bool {
	if _, reg, ok := queueReg(off, RDBAL); ok {
		return reg == RDH || reg == RDT || reg == RXDCTL
	}
	return off == nicmodel.ICR || off == nicmodel.EICR
}

func drainsOnWrite(off uint32) bool {
	if _, reg, ok := queueReg(off, RDBAL); ok {
		return reg == RDT || reg == RXDCTL
	}
	return off == nicmodel.IMS || off == nicmodel.EIMS || off == nicmodel.ICS || off == nicmodel.EICS
}
