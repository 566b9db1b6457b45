package igc

import (
	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// ownRx is the ring as adv.Pair.Receive drives it: each refill, once a
// poll, publishes how the poll's frames were built.
type ownRx struct {
	*rxRing
	q *queue
}

func (o ownRx) Drop(reason ring.DropReason) { o.drop(reason) }

func (o ownRx) Refill(write func(i int, addr kernel.DMAAddr)) bool {
	moved := o.refill(write)
	o.q.publishRx()
	return moved
}

// frame takes one good frame through the program, if any, and into p
// for the caller (adv.Frame); it reports whether it filled p.
func (q *queue) frame(wb adv.Rx, prog xsk.Program, p *nic.RxPacket) bool {
	r, n := q.rx, wb.Length
	if prog != nil {
		b, err := r.peek(n)
		if err != nil {
			return false
		}
		v := q.X.Run(prog, b)
		switch v {
		case xsk.Pass:
		case xsk.Tx:
			q.SendTxVerdict(b)
			r.keep(n)
			return false
		default: // Drop, or Redirect (copied to the socket, if any)
			r.keep(n)
			return false
		}
	}
	var (
		buf     buffer.Buffer
		recycle func(*buffer.View)
		err     error
	)
	if r.layout == Build {
		buf, recycle, err = r.build(n)
	} else {
		buf, err = r.construct(n)
	}
	if err != nil {
		return false
	}
	*p = nic.RxPacket{Data: buf, CsumOK: wb.CsumOK(), Hash: wb.Hash, Recycle: recycle}
	return true
}

// publishRx adds the ring's tally of the poll to the shared counters;
// RxMu is held.
func (q *queue) publishRx() {
	built, constructed := q.rx.publish()
	if built != 0 {
		q.built.Add(built)
	}
	if constructed != 0 {
		q.constructed.Add(constructed)
	}
}
