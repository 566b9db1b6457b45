package igb

import (
	"github.com/ether9/ether9/drivers/advregs"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"gvisor.dev/gvisor/pkg/buffer"
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
	q.txMu.Lock()
	if q.x.Socket() != nil && !q.stopped {
		q.x.Send(budget)
		q.reclaim()
	}
	q.txq.Flush()
	q.txMu.Unlock()
	return n
}

// clean is the RX loop, the same for half-page and zero-copy buffers;
// rxMu is held.
func (q *queue) clean(budget int, deliver func(*nic.RxPacket)) int {
	prog := q.x.Program()
	zc := q.x.ZeroCopy()
	descs := q.rx.Descs
	handled := 0
	for handled < budget {
		armed, i := q.rx.Armed(), q.rx.Clean()
		if zc {
			armed, i = q.x.Armed(), q.x.Clean()
		}
		if armed == 0 {
			break
		}
		desc := descs.At(i)
		wb := decodeRx(desc)
		if !wb.done() {
			break
		}
		switch {
		case q.discard:
			q.drop(ring.DropMulti)
			if wb.eop() {
				q.discard = false
			}
		case !wb.eop():
			// Frames must fit one buffer; drop this one through its EOP.
			q.drop(ring.DropMulti)
			q.discard = true
		case wb.frameError():
			q.drop(ring.DropErrorBits)
		case zc:
			q.frameZC(wb, prog, deliver)
		default:
			q.frame(wb, prog, deliver)
		}
		// Clear the write-back so a stale DD is never read again.
		encodeRxRead(desc, 0)
		if zc {
			q.x.Advance()
		} else {
			q.rx.Advance()
		}
		handled++
	}
	var moved bool
	tail := 0
	if zc {
		moved, tail = q.x.Refill(), q.x.Tail()
	} else {
		moved, tail = q.rx.Refill(q.writeRx), q.rx.Tail()
	}
	if moved {
		q.d.regs.Write32(advregs.QueueReg(advregs.RDT, q.idx), uint32(tail))
	}
	return handled
}

// drop discards the frame at the clean index; its buffer stays armed.
func (q *queue) drop(r ring.DropReason) {
	if q.x.ZeroCopy() {
		q.rx.Stats.Drop(r)
		q.rx.Stats.Recycled.Add(1)
		return
	}
	q.rx.Drop(r)
}

// frame handles a good frame in a half-page buffer.
func (q *queue) frame(wb rxWriteback, prog xsk.Program, deliver func(*nic.RxPacket)) {
	n := wb.length
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
			deliver(&nic.RxPacket{Data: buf, CsumOK: wb.csumOK(), Hash: wb.hash})
		}
		return
	case xsk.Tx:
		q.txMu.Lock()
		q.sendCopy(b)
		q.txMu.Unlock()
	}
	q.rx.Keep(n)
}

// frameZC handles a good frame the NIC wrote into a socket's frame.
func (q *queue) frameZC(wb rxWriteback, prog xsk.Program, deliver func(*nic.RxPacket)) {
	n := wb.length
	b, v, err := q.x.RunZC(prog, n)
	if err != nil {
		q.drop(ring.DropLength)
		return
	}
	q.rx.Stats.Frames.Add(1)
	q.rx.Stats.Bytes.Add(uint64(n))
	switch v {
	case xsk.Pass:
		// The frame belongs to the socket: the stack gets a copy.
		deliver(&nic.RxPacket{Data: buffer.MakeWithData(b), CsumOK: wb.csumOK(), Hash: wb.hash})
		q.rx.Stats.Copybreak.Add(1)
	case xsk.Tx:
		q.txMu.Lock()
		q.sendCopy(b)
		q.txMu.Unlock()
	case xsk.Redirect:
		return
	}
	q.rx.Stats.Recycled.Add(1)
}
