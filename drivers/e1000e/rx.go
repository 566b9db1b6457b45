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
	// The frames are judged by the fault count read now, less what the
	// transmit injection took as its own.
	if fc := d.rxGuard.Counter(); fc != nil {
		n = d.rxGuard.Judge(d.rxFaultCount(fc), pkts[:n], &rx.Stats)
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
