package igb

import (
	"time"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
)

// Interrupts: MSI-X when probe enabled it (adv.MSIX: a vector per queue
// pair, its RX and TX causes routed to it, and one for the link), else
// legacy mode (82576 datasheet 7.3), the one INTx that Linux hands us
// through uio_pci_generic (or the one MSI of the ring-0 platform). Every queue's
// RX and TX causes set ICR.RXDW/TXDW and the queue's own EICR bit (IVAR
// names bit n for queue pair n; the 82575's EICR bits are fixed); the
// link sets ICR.LSC. A queue polls with its causes masked and, once its
// ring is empty, sleeps on the line the queues share (intr.Line), which
// enables its EICR bit and the queue causes in IMS, reads ICR then EICR
// once per interrupt and wakes the queues named (adv.Legacy).
//
// No lost edge: a frame that lands after a queue's last empty poll sets
// ICR.RXDW and the queue's EICR bit. Only the wake-up's read of ICR
// clears the first and only its read of EICR, after it, the second. If no
// wake-up read ICR since the frame, the IMS and EIMS writes of the
// queue's Wait find the cause pending and INTx is asserted the moment
// they land (the line is level-triggered and stays asserted while an
// enabled cause is pending), so the sleep ends at once. If one did, its
// EICR read named the queue while it was not asleep, and the Line kept
// that for it: its Wait returns at once.

// itrInterval is EITR0's minimum gap between interrupts: 50 us, at most
// 20000 a second, where Linux's igb starts. A busy link then costs at most
// that many wake-ups a second while a queue sleeps, and an idle one's
// first frame waits at most 50 us more.
const itrInterval = 50 * time.Microsecond

// ivarSlot is where a MAC type keeps the IVAR entry of RX (or TX) queue q:
// a register and the entry's bit offset in it.
func ivarSlot(t MACType, q int, tx bool) (reg uint32, shift uint) {
	if tx {
		shift = 8
	}
	if t == Mac82576 {
		// IVAR(q mod 8): queues 0-7 in bits 15:0, queues 8-15 in 31:16.
		return adv.IVAR0 + 4*uint32(q&7), shift + uint(q&8)<<1
	}
	// 82580 and later: IVAR(q/2), odd queues in bits 31:16.
	return adv.IVAR0 + 4*uint32(q>>1), shift + uint(q&1)<<4
}

// ivarSlot is ivarSlot for the device's MAC type.
func (d *Device) ivarSlot(q int, tx bool) (uint32, uint) { return ivarSlot(d.info.Type, q, tx) }

// queueBits returns every queue's EICR bits: what the IVAR entries name,
// or on the 82575 its fixed RX and TX queue bits.
func (d *Device) queueBits() []uint32 {
	bits := adv.QueueBits(len(d.queues))
	if d.info.Type == Mac82575 {
		for i := range bits {
			bits[i] = EICR_RX_QUEUE0<<i | EICR_TX_QUEUE0<<i
		}
	}
	return bits
}

// Vectors implements probe.Driver.Vectors: a vector for each queue pair
// the part brings up and one for the other causes; none on the 82575,
// whose MSI-X vectors MSIXBM maps rather than IVAR.
func Vectors(dev *nic.Device) int {
	_, info, err := Lookup(dev.Func.Vendor, dev.Func.Device)
	if err != nil || info.Type == Mac82575 {
		return 0
	}
	return adv.Vectors(dev, queuePairs(info))
}

// queuePairs is how many queue pairs a part has for the driver: up to
// maxQueues, one without RSS.
func queuePairs(info MACInfo) int {
	if info.Flags&FlagNoRSS != 0 {
		return 1
	}
	return min(info.Queues, maxQueues)
}

// setupInterrupts routes the queues to their EICR bits, or in MSI-X mode
// to their vectors, and puts the device in that mode, moderated, the
// queue causes masked.
func (d *Device) setupInterrupts() {
	itr := adv.ITR(itrInterval)
	if d.Vec != nil {
		d.Vec.Setup(itr, d.ivarSlot)
		return
	}
	gpie := uint32(adv.GPIE_NSICR)
	if d.info.Type == Mac82575 {
		// No GPIE and no IVAR; the moderation counter loads from
		// EITR's upper half.
		gpie = 0
		itr |= itr << 16
	} else {
		d.Core.RouteQueues(len(d.queues), d.ivarSlot)
	}
	d.IRQ.Setup(gpie, itr)
}

// Wait implements nic.Queue: an idle queue sleeps on its vector, or on
// the device's line, until its interrupt or timeout.
func (q *queue) Wait(timeout time.Duration) bool { return q.d.Port.Wait(q.Idx, timeout) }
