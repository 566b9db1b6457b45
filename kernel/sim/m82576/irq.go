package m82576

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// Interrupts (datasheet 7.3). A queue event sets its legacy cause in ICR
// (RXDW, TXDW) and the EICR bit its IVAR entry names, if the entry's
// valid bit is set: IVAR maps queues to EICR bits in every mode. Other
// causes (link, missed packets) latch in ICR; when one becomes pending
// with its IMS bit set it sets the "other" EICR bit: bit 31 outside
// MSI-X mode, the vector IVAR_MISC names in MSI-X mode.
//
// Outside MSI-X mode the one line is INTx, level-triggered: asserted
// while an enabled cause is pending (ICR&IMS or EICR&EIMS). In MSI-X mode (GPIE.Multiple_MSIX) a
// vector fires when its EICR bit and its EIMS bit are both set; firing
// clears the EICR bit if EIAC says so and masks the vector in EIMS if
// EIAM and GPIE.EIAME say so, so a vector fires once per re-arm. A
// vector that fires sends its MSI-X table entry's message (or sets its
// pending bit while the entry is masked) when MSI-X is enabled in config
// space; without that the function's one MSI carries every vector.

// ivarEntry returns the IVAR byte for RX (or TX) queue q: IVAR(q mod 8),
// bits 7:0 (RX) and 15:8 (TX) for queues 0-7, bits 23:16 and 31:24 for
// queues 8-15.
func (n *NIC) ivarEntry(q uint32, tx bool) uint32 {
	reg := n.regs[nicmodel.IVAR0/4+q%8]
	shift := q / 8 * 16
	if tx {
		shift += 8
	}
	return reg >> shift & 0xff
}

// queuesOnLocked returns, one bit per queue, the RX (or TX) queues whose
// IVAR entry is valid and names one of the EICR bits in vectors.
func (n *NIC) queuesOnLocked(vectors uint32, tx bool) uint32 {
	var qs uint32
	for q := range uint32(numQueues) {
		if e := n.ivarEntry(q, tx); e&nicmodel.IvarValid != 0 && vectors&(1<<(e&ivarVectorMsk)) != 0 {
			qs |= 1 << q
		}
	}
	return qs
}

// queueCauseLocked signals a descriptor write-back on queue q.
func (n *NIC) queueCauseLocked(q uint32, tx bool) {
	cause := uint32(IntRXDW)
	if tx {
		cause = nicmodel.IntTXDW
	}
	n.regs[nicmodel.ICR/4] |= cause
	if e := n.ivarEntry(q, tx); e&nicmodel.IvarValid != 0 {
		n.regs[nicmodel.EICR/4] |= 1 << (e & ivarVectorMsk)
	}
	n.assertLocked()
}

// otherCauseLocked latches non-queue causes in ICR.
func (n *NIC) otherCauseLocked(bits uint32) {
	r := n.regs
	if bits&^r[nicmodel.ICR/4]&r[nicmodel.IMS/4] != 0 {
		n.otherVectorLocked()
	}
	r[nicmodel.ICR/4] |= bits
	n.assertLocked()
}

// otherVectorLocked sets the EICR bit that stands for the ICR causes.
func (n *NIC) otherVectorLocked() {
	r := n.regs
	if !n.msixLocked() {
		r[nicmodel.EICR/4] |= nicmodel.EicrOther
		return
	}
	if e := r[nicmodel.IVAR_MISC/4] >> 8 & 0xff; e&nicmodel.IvarValid != 0 {
		r[nicmodel.EICR/4] |= 1 << (e & ivarVectorMsk)
	}
}

// setIMSLocked enables ICR causes; one already pending signals at once.
func (n *NIC) setIMSLocked(v uint32) {
	r := n.regs
	v &= intCauses
	if r[nicmodel.ICR/4]&v&^r[nicmodel.IMS/4] != 0 {
		n.otherVectorLocked()
	}
	r[nicmodel.IMS/4] |= v
	n.assertLocked()
}

func (n *NIC) msixLocked() bool { return n.regs[nicmodel.GPIE/4]&nicmodel.GpieMultiMSIX != 0 }

// assertLocked delivers what is pending and enabled.
func (n *NIC) assertLocked() {
	r := n.regs
	if n.msixLocked() {
		fire := r[nicmodel.EICR/4] & r[nicmodel.EIMS/4]
		if fire == 0 {
			return
		}
		r[nicmodel.EICR/4] &^= fire & r[nicmodel.EIAC/4]
		if r[nicmodel.GPIE/4]&nicmodel.GpieEIAME != 0 {
			r[nicmodel.EIMS/4] &^= fire & r[nicmodel.EIAM/4]
		}
		n.sendLocked(fire)
		return
	}
	if r[nicmodel.ICR/4]&r[nicmodel.IMS/4]&intCauses != 0 {
		r[nicmodel.EICR/4] |= nicmodel.EicrOther
	}
	n.lineLocked()
}

// lineLocked drives INTx outside MSI-X mode: asserted, and ICR.INT_ASSERTED
// set, while an enabled cause is pending (ICR&IMS or EICR&EIMS). It drops
// when the causes are read or written clear or masked, and an enable that
// finds a cause pending asserts it at once. In MSI-X mode the line is idle.
func (n *NIC) lineLocked() {
	r := n.regs
	if n.msixLocked() {
		n.irq.SetLevel(false)
		return
	}
	on := r[nicmodel.EICR/4]&r[nicmodel.EIMS/4] != 0 || r[nicmodel.ICR/4]&r[nicmodel.IMS/4]&intCauses != 0
	if on {
		r[nicmodel.ICR/4] |= nicmodel.IntAsserted
	} else {
		r[nicmodel.ICR/4] &^= nicmodel.IntAsserted
	}
	n.irq.SetLevel(on)
}

// readICRLocked is the read-to-clear of ICR: the causes clear when the
// interrupt was asserted, when no cause is enabled, or always with
// GPIE.NSICR. Outside MSI-X mode EICR's Other bit, which stands for the
// ICR causes, clears with them; EICR's queue bits clear only on a read
// (or write) of EICR itself, so a driver learns
// from it which queues the interrupt was for.
func (n *NIC) readICRLocked() uint32 {
	r := n.regs
	v := r[nicmodel.ICR/4]
	if v&nicmodel.IntAsserted != 0 || r[nicmodel.IMS/4] == 0 || r[nicmodel.GPIE/4]&nicmodel.GpieNSICR != 0 {
		if v&nicmodel.IntAsserted != 0 {
			r[nicmodel.IMS/4] &^= r[nicmodel.IAM/4]
		}
		r[nicmodel.ICR/4] = 0
		if !n.msixLocked() {
			r[nicmodel.EICR/4] &^= nicmodel.EicrOther
		}
	}
	return v
}

// sendLocked delivers the vectors in fire: each its MSI-X message, or the
// one MSI for all of them while MSI-X is off.
func (n *NIC) sendLocked(fire uint32) {
	if !n.msix.Enabled() {
		n.irq.Raise()
		return
	}
	for v := range msixVectors {
		if fire&(1<<v) != 0 {
			n.msix.Signal(v)
		}
	}
}
