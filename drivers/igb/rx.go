package igb

import (
	"github.com/ether9/ether9/drivers/advdesc"
	"github.com/ether9/ether9/drivers/advrx"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
)

// Poll implements nic.Queue: it cleans up to budget completed RX
// descriptors, runs the queue's packet program on each good frame and acts
// on its verdict, re-arms the ring, then serves a bound socket's TX ring
// and completions. It returns the frames taken from the ring (delivered,
// redirected, sent back or dropped by the program), so a poll loop stays
// busy while a socket takes the traffic.
func (q *queue) Poll(budget int, deliver func(*nic.RxPacket)) int {
	d := q.d
	if d.closed.Load() {
		return 0
	}
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	if d.closed.Load() {
		return 0
	}
	n := q.clean(budget, deliver)
	q.txq.Mu.Lock()
	if q.x.Socket() != nil && !q.stopped {
		q.x.Send(budget)
		q.txq.ReclaimLocked()
	}
	q.txq.Flush()
	q.txq.Mu.Unlock()
	return n
}

// clean is the RX loop, the same for half-page and zero-copy buffers;
// rxMu is held.
func (q *queue) clean(budget int, deliver func(*nic.RxPacket)) int {
	prog := q.x.Program()
	if q.x.ZeroCopy() {
		z := advrx.ZeroCopy{X: q.x, Stats: &q.rx.Stats, Tx: &q.txq}
		n, moved := z.Clean(q.rx.Descs, budget, &q.discard, prog, deliver)
		if moved {
			q.d.core.SetRxTail(q.idx, q.x.Tail())
		}
		return n
	}
	n := advrx.CleanRx(q.rx.Descs, q.rx, budget, &q.discard, q.rx.Drop, func(wb advdesc.Rx) { q.frame(wb, prog, deliver) })
	if q.rx.Refill(q.writeRx) {
		q.d.core.SetRxTail(q.idx, q.rx.Tail())
	}
	return n
}

// frame handles a good frame in a half-page buffer.
func (q *queue) frame(wb advdesc.Rx, prog xsk.Program, deliver func(*nic.RxPacket)) {
	n := wb.Length
	v := xsk.Pass
	var b []byte
	if prog != nil {
		var err error
		if b, err = q.rx.Peek(n); err != nil {
			q.rx.Drop(ring.DropLength)
			return
		}
		v = q.x.Run(prog, b)
	}
	switch v {
	case xsk.Pass:
		buf, _, err := q.rx.Receive(n)
		if err == nil {
			deliver(&nic.RxPacket{Data: buf, CsumOK: wb.CsumOK(), Hash: wb.Hash})
		}
		return
	case xsk.Tx:
		q.txq.Mu.Lock()
		q.txq.SendCopy(b)
		q.txq.Mu.Unlock()
	}
	q.rx.Keep(n)
}
