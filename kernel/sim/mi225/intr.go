package mi225

import (
	"math/bits"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// Interrupts. Causes for the queues are mapped by IVAR to an MSI-X vector
// (GPIE.Multiple_MSIX set) or to an EICR bit 3:0 (MSI and INTx): IVAR(n)
// holds queues 2n and 2n+1, each as an RX byte then a TX byte (vector in
// the low bits, bit 7 valid), queue 2n in bits 15:0. The other causes
// latch in ICR and, when enabled in IMS, set the vector IVAR_MISC bits
// 15:8 name (or EICR bit 31 in MSI and INTx mode).
//
// In MSI-X mode a vector fires when its EICR bit is set and enabled in
// EIMS; firing clears the EICR bits in EIAC and, with GPIE.EIAME, masks
// those in EIAM, and sends the vector's MSI-X table entry's message (its
// pending bit set while the entry is masked) when MSI-X is enabled in
// config space, or the function's one MSI when it is not. In MSI and INTx mode the line is asserted while any
// enabled ICR or EICR cause is pending, ICR.INT_ASSERTED shows it, and a
// read of ICR or EICR clears them.

func (n *NIC) msixModeLocked() bool { return n.regs[nicmodel.GPIE/4]&nicmodel.GpieMultiMSIX != 0 }

func (n *NIC) eicrValidLocked() uint32 {
	if n.msixModeLocked() {
		return eicrVectors
	}
	return eicrLegacy
}

// ivarEntry returns the IVAR byte of a queue's RX or TX cause.
func (n *NIC) ivarEntry(q int, tx bool) uint32 {
	v := n.regs[nicmodel.IVAR0/4+q/2] >> (16 * (q % 2))
	if tx {
		v >>= 8
	}
	return v & 0xff
}

// ivarVectorLocked is the EICR bit a queue's valid RX (or TX) IVAR entry
// names in the current mode, or false if the entry names none.
func (n *NIC) ivarVectorLocked(q int, tx bool) (uint32, bool) {
	e := n.ivarEntry(q, tx)
	switch {
	case e&nicmodel.IvarValid == 0:
		return 0, false
	case !n.msixModeLocked():
		return 1 << (e & 3), true
	case e&ivarVecMask < msixVectors:
		return 1 << (e & ivarVecMask), true
	}
	return 0, false
}

// queuesOnLocked returns, one bit per queue, the RX (or TX) queues whose
// vector is among the EICR bits in vectors.
func (n *NIC) queuesOnLocked(vectors uint32, tx bool) uint32 {
	var qs uint32
	for q := range Queues {
		if b, ok := n.ivarVectorLocked(q, tx); ok && vectors&b != 0 {
			qs |= 1 << q
		}
	}
	return qs
}

// queueArmedLocked reports whether RX queue q's vector may signal now:
// in MSI-X mode, its EIMS bit is set; in MSI and INTx mode the line
// carries every cause.
func (n *NIC) queueArmedLocked(q int) bool {
	if !n.msixModeLocked() {
		return true
	}
	b, ok := n.ivarVectorLocked(q, false)
	return ok && n.regs[nicmodel.EIMS/4]&b != 0
}

// kickLocked wakes the driver of RX queue q, whose vector is armed, for
// DMA the model will do on its next look (Options.DeferRx): the vector's
// message, or the line while MSI-X is off in config space.
func (n *NIC) kickLocked(q int) {
	b, ok := n.ivarVectorLocked(q, false)
	if !n.msix.Enabled() || !ok {
		n.irq.Raise()
		return
	}
	n.msix.Signal(bits.TrailingZeros32(b))
}

// queueEventLocked signals that queue q completed receive (or transmit)
// work.
func (n *NIC) queueEventLocked(q int, tx bool) {
	bit, ok := n.ivarVectorLocked(q, tx)
	if n.msixModeLocked() {
		if ok {
			n.extCauseLocked(bit)
		}
		return
	}
	cause := uint32(nicmodel.IntRXT0)
	if tx {
		cause = nicmodel.IntTXDW
	}
	n.regs[ICR/4] |= cause
	n.extCauseLocked(bit) // no bit without a valid entry: ICR alone asserts
}

// otherCauseLocked latches ICR causes and passes enabled ones on.
func (n *NIC) otherCauseLocked(bits uint32) {
	r := n.regs
	r[ICR/4] |= bits
	if r[ICR/4]&r[IMS/4]&intCauses == 0 {
		n.updateAssertLocked(false)
		return
	}
	if !n.msixModeLocked() {
		n.extCauseLocked(nicmodel.EicrOther)
		return
	}
	if m := r[nicmodel.IVAR_MISC/4] >> ivarMiscOtherShift & 0xff; m&nicmodel.IvarValid != 0 && m&ivarVecMask < msixVectors {
		n.extCauseLocked(1 << (m & ivarVecMask))
	}
}

// extCauseLocked sets EICR bits and fires what is enabled.
func (n *NIC) extCauseLocked(bits uint32) {
	r := n.regs
	r[nicmodel.EICR/4] |= bits
	if !n.msixModeLocked() {
		n.updateAssertLocked(true)
		return
	}
	fire := r[nicmodel.EICR/4] & r[nicmodel.EIMS/4] & eicrVectors
	if fire == 0 {
		return
	}
	r[nicmodel.EICR/4] &^= fire & r[nicmodel.EIAC/4]
	if r[nicmodel.GPIE/4]&nicmodel.GpieEIAME != 0 {
		r[nicmodel.EIMS/4] &^= fire & r[nicmodel.EIAM/4]
	}
	if !n.msix.Enabled() {
		n.irq.Raise() // the one MSI carries every vector
	}
	for v := range msixVectors {
		if fire&(1<<v) != 0 {
			n.counters.Vectors[v]++
			n.msix.Signal(v)
		}
	}
}

// updateAssertLocked recomputes INT_ASSERTED in MSI and INTx mode and
// drives INTx with it: level-triggered, asserted while an enabled cause
// is pending, so it drops when the causes are read clear or masked and an
// enable that finds a cause pending asserts it at once. A new cause
// (raise) counts an interrupt while it is asserted. In MSI-X mode the
// line is idle.
func (n *NIC) updateAssertLocked(raise bool) {
	r := n.regs
	if n.msixModeLocked() {
		r[ICR/4] &^= nicmodel.IntAsserted
		n.irq.SetLevel(false)
		return
	}
	pending := r[ICR/4]&r[IMS/4]&intCauses != 0 || r[nicmodel.EICR/4]&r[nicmodel.EIMS/4]&eicrLegacy != 0
	if !pending {
		r[ICR/4] &^= nicmodel.IntAsserted
		n.irq.SetLevel(false)
		return
	}
	r[ICR/4] |= nicmodel.IntAsserted
	if raise {
		n.counters.Interrupts++
	}
	n.irq.SetLevel(true)
}
