package igc

import (
	"time"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
)

// Interrupts: MSI-X when probe enabled it (adv.MSIX: a vector per queue
// pair, its RX and TX causes routed to it, and one for the link), else
// legacy mode (I225 datasheet 7.3), the one INTx that Linux hands us
// through uio_pci_generic (or the one MSI of the ring-0 platform). Every queue's RX and TX causes set
// ICR.RXDW/TXDW and EICR bit n for queue pair n (IVAR names bits 3:0
// outside MSI-X mode); the link sets ICR.LSC. A queue polls with its
// causes masked and, once its ring is empty, sleeps on the line the
// queues share (intr.Line), which enables its EICR bit and the queue
// causes in IMS, reads ICR then EICR once per interrupt and wakes the
// queues named (adv.Legacy).
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
// 20000 a second, where Linux's igc starts its vectors. A busy link then
// costs at most that many wake-ups a second while a queue sleeps, and an
// idle one's first frame waits at most 50 us more.
const itrInterval = 50 * time.Microsecond

// ivarSlot is where the IVAR entry of RX (or TX) queue q lives: IVAR(q/2)
// holds queues 2n (bits 15:0) and 2n+1 (bits 31:16), each as an RX byte
// then a TX byte.
func ivarSlot(q int, tx bool) (reg uint32, shift uint) {
	shift = uint(q&1) << 4
	if tx {
		shift += 8
	}
	return adv.IVAR0 + 4*uint32(q>>1), shift
}

// Vectors implements probe.Driver.Vectors: a vector for each queue pair
// brought up and one for the other causes.
func Vectors(dev *nic.Device) int { return adv.Vectors(dev, maxQueues) }

// setupInterrupts routes the queues to their EICR bits, or in MSI-X mode
// to their vectors, and puts the device in that mode, moderated, the
// queue causes masked.
func (d *Device) setupInterrupts() {
	itr := adv.ITR(itrInterval) | adv.EITR_CNT_IGNR
	if d.Vec != nil {
		d.Vec.Setup(itr, ivarSlot)
		return
	}
	d.Core.RouteQueues(len(d.queues), ivarSlot)
	d.IRQ.Setup(adv.GPIE_NSICR, itr)
}

// Wait implements nic.Queue: an idle queue sleeps on its vector, or on
// the device's line, until its interrupt or timeout.
func (q *queue) Wait(timeout time.Duration) bool { return q.d.Port.Wait(q.Idx, timeout) }
