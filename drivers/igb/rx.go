package igb

import (
	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
)

// Receive implements nic.Queue: it cleans up to len(pkts) completed RX
// descriptors, runs the queue's packet program on each good frame and
// acts on its verdict, fills pkts with the frames passed, re-arms the
// ring, then serves a bound socket's TX ring and completions. taken
// counts the frames redirected, sent back or dropped by the program too,
// so a poll loop stays busy while a socket takes the traffic.
func (q *queue) Receive(pkts []nic.RxPacket) (n, taken int) {
	d := q.d
	if d.closed.Load() {
		return 0, 0
	}
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	if d.closed.Load() {
		return 0, 0
	}
	prog := q.x.Program()
	if q.x.ZeroCopy() {
		z := adv.ZeroCopy{X: q.x, Stats: &q.rx.Stats, Tx: &q.txq}
		var moved bool
		n, taken, moved = z.Clean(q.rx.Descs, pkts, &q.discard, prog)
		if moved {
			q.d.core.SetRxTail(q.idx, q.x.Tail())
		}
	} else {
		start := q.rx.Clean()
		taken = ring.CleanRx(q.rx.Descs, q.rx, adv.FrameErrors, len(pkts), &q.discard, q.rx.Drop, func(desc []byte) {
			wb := adv.DecodeRx(desc)
			if q.frame(wb, prog, &pkts[n]) {
				n++
			}
		})
		if q.rx.Refill(q.inject.Writer(start, taken, q.rx.Descs.Len(), q.writeRx, q.armRx)) {
			q.d.core.SetRxTail(q.idx, q.rx.Tail())
		}
	}
	// A device marks a descriptor done even when its data write was
	// refused.
	n = q.guard.Check(pkts[:n], &q.rx.Stats)
	q.txq.Mu.Lock()
	if q.x.Socket() != nil && !q.stopped {
		q.x.Send(len(pkts))
		q.txq.ReclaimLocked()
	}
	q.txq.Flush()
	q.txq.Mu.Unlock()
	return n, taken
}

// frame handles a good frame in a half-page buffer: it reports whether
// it filled p with a frame for the caller.
func (q *queue) frame(wb adv.Rx, prog xsk.Program, p *nic.RxPacket) bool {
	n := wb.Length
	v := xsk.Pass
	var b []byte
	if prog != nil {
		var err error
		if b, err = q.rx.Peek(n); err != nil {
			q.rx.Drop(ring.DropLength)
			return false
		}
		v = q.x.Run(prog, b)
	}
	switch v {
	case xsk.Pass:
		buf, _, err := q.rx.Receive(n)
		if err != nil {
			return false
		}
		*p = nic.RxPacket{Data: buf, CsumOK: wb.CsumOK(), Hash: wb.Hash}
		return true
	case xsk.Tx:
		q.txq.Mu.Lock()
		q.txq.SendCopy(b)
		q.txq.Mu.Unlock()
	}
	q.rx.Keep(n)
	return false
}
