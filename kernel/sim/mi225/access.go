package mi225

import "github.com/ether9/ether9/kernel/sim/nicmodel"

// queueReg splits an offset in the per-queue blocks into the queue-0
// register and the queue number.
func queueReg(off uint32) (reg uint32, q int, ok bool) {
	for _, base := range [...]uint32{RDBAL, TDBAL} {
		if off >= base && off < base+Queues*QueueStride {
			return base + (off-base)%QueueStride, int((off - base) / QueueStride), true
		}
	}
	return 0, 0, false
}

// rxQueueTouched is the queue whose waiting frames (Options.DeferRx) an
// access to off moves into its ring: a read of RDH, RDT or RXDCTL (before
// the read), a write of RDT or RXDCTL (after the write: a new tail may
// make room). Other registers leave the packet buffer alone, the
// interrupt causes included, so a thread that transmits, reads
// statistics or acknowledges causes never writes a ring another thread
// polls.
func rxQueueTouched(off uint32, write bool) (int, bool) {
	reg, q, ok := queueReg(off)
	if !ok || reg < RDBAL || reg >= TDBAL {
		return 0, false
	}
	return q, reg == RDT || reg == RXDCTL || !write && reg == RDH
}

// txQueueTouched is the queue whose handed-over descriptors
// (Options.DeferTx) an access to off processes: any access to its TDH,
// TDT or TXDCTL, before the access takes effect, so that a TDT write
// leaves the descriptors it hands over for a later touch and a TDH read
// returns the head the work left. Other registers leave the queue alone,
// so a thread that receives, reads statistics or acknowledges causes
// never writes back a descriptor another thread reclaims; the one
// exception is the arming of the queue's vector (write32).
func txQueueTouched(off uint32) (int, bool) {
	reg, q, ok := queueReg(off)
	if !ok || reg < TDBAL {
		return 0, false
	}
	return q, reg == TDH || reg == TDT || reg == TXDCTL
}

func (n *NIC) read32(off uint32) uint32 {
	if off%4 != 0 || off >= regFileSize {
		return 0
	}
	if q, ok := rxQueueTouched(off, false); ok {
		n.drainQueue(q, false)
	}
	if q, ok := txQueueTouched(off); ok && n.txDefer.On {
		n.kickTx(q, n.txDefer.PerTouch)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	v := n.readLocked(off)
	n.updateAssertLocked(false)
	return v
}

func (n *NIC) readLocked(off uint32) uint32 {
	r := n.regs
	if off == EEC {
		off = nicmodel.EECD
	}
	switch {
	case off == nicmodel.STATUS:
		return n.statusLocked()
	case off == ICR:
		return n.readICRLocked()
	case off == nicmodel.EICR:
		v := r[nicmodel.EICR/4]
		if r[nicmodel.GPIE/4]&nicmodel.GpieMultiMSIX == 0 {
			r[nicmodel.EICR/4] = 0 // MSI and INTx: read to clear
		}
		return v
	case off == ICS, off == IMC, off == nicmodel.EICS, off == nicmodel.EIMC:
		return 0 // write-only
	case off >= statsLo && off < statsHi:
		return nicmodel.ReadStat(n.regs[:], off)
	}
	return r[off/4]
}

// readICRLocked is the read of ICR: it clears the causes when the
// interrupt was asserted, when no cause is enabled, or always with
// GPIE.NSICR. In MSI and INTx mode EICR's Other bit, which stands for
// the ICR causes, clears with them; the queue bits stay for a read of
// EICR.
func (n *NIC) readICRLocked() uint32 {
	r := n.regs
	v := r[ICR/4]
	if v&nicmodel.IntAsserted != 0 || r[IMS/4] == 0 || r[nicmodel.GPIE/4]&nicmodel.GpieNSICR != 0 {
		r[ICR/4] = 0
		if !n.msixModeLocked() {
			r[nicmodel.EICR/4] &^= nicmodel.EicrOther
		}
	}
	return v
}

func (n *NIC) statusLocked() uint32 {
	s := n.regs[nicmodel.STATUS/4] & (StatusPFRstDone | StatusLANInit | nicmodel.StatusPHYRA)
	if l := n.link; l.up {
		s |= nicmodel.StatusLU | nicmodel.StatusFD
		switch l.speed {
		case 100:
			s |= StatusSpeed100
		case 1000:
			s |= StatusSpeed1000
		case 2500:
			s |= StatusSpeed1000 | StatusSpeed2500
		}
	}
	if n.regs[nicmodel.CTRL/4]&nicmodel.CtrlGIOMDis == 0 {
		s |= nicmodel.StatusGIOME
	}
	return s
}

func (n *NIC) write32(off, v uint32) {
	if off%4 != 0 || off >= regFileSize {
		return
	}
	if q, ok := rxQueueTouched(off, true); ok {
		defer n.drainQueue(q, false)
	}
	if q, ok := txQueueTouched(off); ok && n.txDefer.On {
		n.kickTx(q, n.txDefer.PerTouch)
	}
	if off == nicmodel.CTRL && v&ctrlSelfClr != 0 {
		n.Reset()
		if v&CtrlDevRST != 0 {
			n.mu.Lock()
			n.otherCauseLocked(IntDRSTA)
			n.mu.Unlock()
		}
		return
	}
	n.mu.Lock()
	kick := n.writeLocked(off, v)
	n.updateAssertLocked(false)
	var armed, txArmed uint32
	if (off == nicmodel.EIMS || off == nicmodel.EIMC && !n.msixModeLocked()) && n.opt.DeferRx {
		armed = n.queuesOnLocked(v, false)
	}
	if off == nicmodel.EIMS && n.txDefer.On {
		txArmed = n.queuesOnLocked(v, true)
	}
	n.mu.Unlock()
	// Arming a queue's vector is when its waiting frames land: the
	// driver's idle poll loop writes EIMS on its own goroutine just before
	// it sleeps, and the frames fire the vector it armed. In MSI and INTx
	// mode so is masking it: the loop the line woke, or the one that took
	// the line and wakes it, writes EIMC before the woken loop polls its
	// ring. With DeferTx
	// the loop's re-arm also lets the engine go on with the queue's
	// transmit descriptors, whose completion fires the vector too: a
	// driver that only polls its descriptors in memory for DD would
	// otherwise wait for its next send.
	n.drainQueues(armed, off == nicmodel.EIMC)
	for q := range Queues {
		if txArmed&(1<<q) != 0 {
			n.kickTx(q, n.txDefer.PerTouch)
		}
	}
	switch {
	case n.txDefer.On: // a tail or an enable is only recorded
	case kick >= 0:
		n.kickTx(kick, 0)
	case kick == kickAll:
		for q := range Queues {
			n.kickTx(q, 0)
		}
	}
}

const (
	kickNone = -1
	kickAll  = -2
)

// writeLocked stores a register write with its side effects and says
// which transmit queue, if any, has work to look at.
func (n *NIC) writeLocked(off, v uint32) (kick int) {
	r := n.regs
	if reg, q, ok := queueReg(off); ok {
		return n.writeQueueLocked(reg, q, off, v)
	}
	switch {
	case off == nicmodel.CTRL:
		r[nicmodel.CTRL/4] = v
		n.linkChangedLocked()
	case off == nicmodel.STATUS:
		r[nicmodel.STATUS/4] &^= ^v & nicmodel.StatusPHYRA // PHYRA clears by writing 0
	case off == nicmodel.EECD:
		r[nicmodel.EECD/4] = r[nicmodel.EECD/4]&^0xf | v&0xf // software bit-bang bits only
	case off == EERD:
		n.eerdLocked(v)
	case off == nicmodel.MDIC:
		n.mdicLocked(v)
	case off == ICR:
		r[ICR/4] &^= v
		n.updateAssertLocked(false)
	case off == ICS:
		n.otherCauseLocked(v & intCauses)
	case off == IMS:
		r[IMS/4] |= v & intCauses
		n.otherCauseLocked(0)
	case off == IMC:
		r[IMS/4] &^= v
		n.updateAssertLocked(false)
	case off == nicmodel.EICR:
		r[nicmodel.EICR/4] &^= v
	case off == nicmodel.EICS:
		n.extCauseLocked(v & n.eicrValidLocked())
	case off == nicmodel.EIMS:
		r[nicmodel.EIMS/4] |= v & n.eicrValidLocked()
		n.extCauseLocked(0)
	case off == nicmodel.EIMC:
		r[nicmodel.EIMS/4] &^= v
	case off == nicmodel.TCTL:
		r[nicmodel.TCTL/4] = v
		if v&nicmodel.TctlEN != 0 {
			return kickAll
		}
	case off >= statsLo && off < statsHi:
		// read-only
	default:
		r[off/4] = v
	}
	return kickNone
}

func (n *NIC) writeQueueLocked(reg uint32, q int, off, v uint32) int {
	r := n.regs
	switch reg {
	case RDBAL, TDBAL:
		r[off/4] = v &^ 0x7f // 128-byte aligned
	case RDLEN, TDLEN:
		r[off/4] = v & 0xfff80 // a multiple of 128 bytes
	case RDH, RDT, TDH, TDT:
		r[off/4] = v & 0xffff
	case RXDCTL, TXDCTL:
		v &^= DctlSWFlush // no write-back is ever held: the flush is done at once
		r[off/4] = v
	case RQDPC:
		r[off/4] = v // not clear on read; software writes 0
	default:
		r[off/4] = v
	}
	switch reg {
	case RDBAL, RDBAH, RDLEN, RDH, RXDCTL:
		n.ringGen[q]++
	case TDT:
		return q
	case TXDCTL:
		if v&DctlEnable != 0 {
			return q
		}
	}
	return kickNone
}
