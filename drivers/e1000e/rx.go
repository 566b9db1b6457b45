package e1000e

import (
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
)

func (q *queue) writeRx(i int, addr kernel.DMAAddr) {
	encodeRxRead(q.rx.Descs.At(i), uint64(addr))
}

// Receive implements nic.Queue: it looks at the interrupt causes (a link
// change re-reads the link), cleans up to len(pkts) completed
// descriptors into pkts, re-arms the ring, and drops the frames if the
// device's DMA faulted meanwhile.
func (q *queue) Receive(pkts []nic.RxPacket) (n, taken int) {
	d := q.d
	if d.closed.Load() {
		return 0, 0
	}
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	if d.closed.Load() {
		return 0, 0 // closed while we waited for the ring
	}
	// ICR under rxMu: a reset or ring change never sees its causes read
	// halfway through.
	if icr := d.regs.Read32(ICR); icr&ICR_LSC != 0 {
		d.updateLink()
	}
	rx := q.rx
	start := rx.Clean()
	taken = ring.CleanRx(rx.Descs, rx, rxFrameErrors, len(pkts), &q.rxDiscard, rx.Drop, func(desc []byte) {
		wb := decodeRx(desc)
		if buf, _, err := rx.Receive(wb.length); err == nil {
			pkts[n] = nic.RxPacket{Data: buf, CsumOK: wb.csumOK()}
			n++
		}
	})
	// The frames are judged by the fault count read now, less what the
	// transmit injection took as its own.
	if fc := q.rxGuard.Counter(); fc != nil {
		n = q.rxGuard.Judge(q.rxFaultCount(fc), pkts[:n], &rx.Stats)
	}
	if rx.Refill(q.inject.Writer(start, taken, rx.Descs.Len(), q.writeRx, q.armRx)) {
		d.regs.Write32(RDT, uint32(rx.Tail()))
	}
	return n, taken
}

// RxReady reports whether the device has written back the next receive
// descriptor, from the ring in memory alone: no register is touched, so a
// poll loop that spins between bursts asks this instead of polling, and
// under emulation never holds up the device model with register reads.
func (q *queue) RxReady() bool {
	d := q.d
	if d.closed.Load() {
		return false
	}
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	if d.closed.Load() {
		return false
	}
	return ring.RxWaiting(q.rx.Descs, q.rx)
}
