package igb

import (
	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
)

// frame handles a good frame in a half-page buffer (adv.Frame): it
// reports whether it filled p with a frame for the caller.
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
		v = q.X.Run(prog, b)
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
		q.SendTxVerdict(b)
	}
	q.rx.Keep(n)
	return false
}
