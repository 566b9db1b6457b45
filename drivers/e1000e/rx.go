package e1000e

import (
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
)

func (d *Device) writeRx(i int, addr kernel.DMAAddr) {
	encodeRxRead(d.rx.Descs.At(i), uint64(addr))
}

// Receive implements nic.Queue: it looks at the interrupt causes (a link
// change re-reads the link), cleans up to len(pkts) completed
// descriptors into pkts, re-arms the ring, and drops the frames if the
// device's DMA faulted meanwhile.
func (d *Device) Receive(pkts []nic.RxPacket) (n, taken int) {
	if d.closed.Load() {
		return 0, 0
	}
	d.rxMu.Lock()
	defer d.rxMu.Unlock()
	if d.closed.Load() {
		return 0, 0 // closed while we waited for the ring
	}
	// ICR under rxMu: a reset or ring change never sees its causes read
	// halfway through.
	if icr := d.regs.Read32(ICR); icr&ICR_LSC != 0 {
		d.updateLink()
	}
	rx := d.rx
	for taken < len(pkts) && rx.Armed() > 0 {
		i := rx.Clean()
		desc := rx.Descs.At(i)
		wb := decodeRx(desc)
		if !wb.done() {
			break
		}
		switch {
		case d.rxDiscard:
			// The rest of a frame that spanned buffers.
			rx.Drop(ring.DropMulti)
			if wb.eop() {
				d.rxDiscard = false
			}
		case !wb.eop():
			// Frames must fit one buffer; drop this one through its EOP.
			rx.Drop(ring.DropMulti)
			d.rxDiscard = true
		case wb.frameError():
			rx.Drop(ring.DropErrorBits)
		default:
			buf, _, err := rx.Receive(wb.length)
			if err == nil {
				pkts[n] = nic.RxPacket{Data: buf, CsumOK: wb.csumOK()}
				n++
			}
		}
		// Clear the write-back so a stale DD is never read again.
		encodeRxRead(desc, 0)
		d.cleanedRx(i)
		rx.Advance()
		taken++
	}
	// A device marks a descriptor done even when its data write was
	// refused: the frames are judged by the fault count read now.
	if fc, ok := d.dma.(faultCounter); ok {
		n = d.judgeRx(d.rxFaultCount(fc), pkts[:n])
	}
	if rx.Refill(d.armRx) {
		d.regs.Write32(RDT, uint32(rx.Tail()))
	}
	return n, taken
}

// RxReady reports whether the device has written back the next receive
// descriptor, from the ring in memory alone: no register is touched, so a
// poll loop that spins between bursts asks this instead of polling, and
// under emulation never holds up the device model with register reads.
func (d *Device) RxReady() bool {
	if d.closed.Load() {
		return false
	}
	d.rxMu.Lock()
	defer d.rxMu.Unlock()
	if d.closed.Load() {
		return false
	}
	rx := d.rx
	return rx.Armed() > 0 && decodeRx(rx.Descs.At(rx.Clean())).done()
}

// faultCounter is an optional capability of a DMA view: the number of DMA
// faults the IOMMU recorded for this device so far.
type faultCounter interface {
	DMAFaults() uint64
}

// judgeRx returns how many of the poll's frames to deliver: all, or,
// if the fault count moved since the last poll, none, their data
// released: any of them may hold what the buffer had before, not what
// the wire carried. A fault seen in a poll with no frames stays pending
// for the next frames: the device may record the fault before it writes
// the descriptor back. faults leaves out those the transmit path took as
// its own; one it took after a drop answered it lowers the count, and is
// forgotten.
func (d *Device) judgeRx(faults uint64, pkts []nic.RxPacket) int {
	if faults < d.rxFaults {
		d.rxFaults = faults
	}
	if faults <= d.rxFaults || len(pkts) == 0 {
		return len(pkts)
	}
	d.logf("%s: rx: dma fault: dropped %d frames (faults %d, were %d)", d.name, len(pkts), faults, d.rxFaults)
	d.rxFaults = faults
	for i := range pkts {
		pkts[i].Data.Release()
		pkts[i] = nic.RxPacket{}
		d.rx.Stats.Drop(ring.DropDMA)
	}
	return 0
}
