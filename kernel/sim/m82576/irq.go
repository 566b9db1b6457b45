package m82576

// Interrupts (datasheet 7.3). Queue events set the legacy cause in ICR
// (RXDW, TXDW) and the EICR bit their IVAR entry names; the other causes
// (link, missed packets) set ICR and, when enabled in IMS, the "other"
// bit of EICR: bit 31 outside MSI-X mode, the vector IVAR_MISC names in
// it. The line is raised when an enabled cause is pending. In MSI-X mode
// (GPIE.Multiple_MSIX) a vector firing clears its EICR bit when EIAC asks
// and masks it in EIMS when EIAM and GPIE.EIAME ask.

// ivarEntry returns the IVAR byte for RX (or TX) queue q.
func (n *NIC) ivarEntry(q uint32, tx bool) uint32 {
	reg := n.regs[IVAR0/4+q%8]
	shift := q / 8 * 16
	if tx {
		shift += 8
	}
	return reg >> shift & 0xff
}

// queueCauseLocked signals a descriptor write-back on queue q.
func (n *NIC) queueCauseLocked(q uint32, tx bool) {
	cause := uint32(IntRXDW)
	if tx {
		cause = IntTXDW
	}
	n.regs[ICR/4] |= cause
	if e := n.ivarEntry(q, tx); e&IvarValid != 0 {
		n.regs[EICR/4] |= 1 << (e & ivarVectorMsk)
	}
	n.assertLocked()
}

// otherCauseLocked latches non-queue causes in ICR.
func (n *NIC) otherCauseLocked(bits uint32) {
	n.regs[ICR/4] |= bits
	n.assertLocked()
}

func (n *NIC) msixLocked() bool { return n.regs[GPIE/4]&GpieMultiMSI != 0 }

// assertLocked raises the line if an enabled cause is pending.
func (n *NIC) assertLocked() {
	r := n.regs
	if r[ICR/4]&r[IMS/4]&intCauses != 0 {
		if n.msixLocked() {
			if e := r[IVAR_MISC/4] >> 8 & 0xff; e&IvarValid != 0 {
				r[EICR/4] |= 1 << (e & ivarVectorMsk)
			}
		} else {
			r[EICR/4] |= EicrOther
		}
	}
	fire := r[EICR/4] & r[EIMS/4]
	if fire == 0 && r[ICR/4]&r[IMS/4]&intCauses == 0 {
		r[ICR/4] &^= IntAsserted
		return
	}
	r[ICR/4] |= IntAsserted
	if n.msixLocked() {
		r[EICR/4] &^= fire & r[EIAC/4]
		if r[GPIE/4]&GpieEIAME != 0 {
			r[EIMS/4] &^= fire & r[EIAM/4]
		}
	}
	n.irq.Raise()
}

// readICRLocked is the read-to-clear of ICR: the causes clear when the
// interrupt was asserted, when no cause is enabled, or always with
// GPIE.NSICR. Outside MSI-X mode the read clears EICR too, so the one
// read acknowledges the one interrupt.
func (n *NIC) readICRLocked() uint32 {
	r := n.regs
	v := r[ICR/4]
	if v&IntAsserted != 0 || r[IMS/4] == 0 || r[GPIE/4]&GpieNSICR != 0 {
		if v&IntAsserted != 0 {
			r[IMS/4] &^= r[IAM/4]
		}
		r[ICR/4] = 0
		if !n.msixLocked() {
			r[EICR/4] = 0
		}
	}
	return v
}
