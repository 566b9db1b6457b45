package igc

import (
	"encoding/binary"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// EtherTypes the receive path looks through.
const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100
	etherTypeQinQ = 0x88a8
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

// headerLen is how many bytes construct copies into the head: a frame of
// up to rxHeaderCopy bytes whole, else its Ethernet, IP and TCP or UDP
// headers as far as they parse, never more than rxHeaderCopy.
func headerLen(b []byte) int {
	if len(b) <= rxHeaderCopy {
		return len(b)
	}
	n, et := adv.EthHdrLen, binary.BigEndian.Uint16(b[12:])
	for (et == etherTypeVLAN || et == etherTypeQinQ) && n+adv.VLANTagLen <= len(b) {
		et = binary.BigEndian.Uint16(b[n+2:])
		n += adv.VLANTagLen
	}
	var proto byte
	switch et {
	case etherTypeIPv4:
		if n+20 > len(b) {
			return n
		}
		ihl := int(b[n]&0xf) * 4
		if ihl < 20 {
			return n
		}
		proto = b[n+9]
		if binary.BigEndian.Uint16(b[n+6:])&0x3fff != 0 { // a fragment: no L4 header to follow
			return min(n+ihl, rxHeaderCopy)
		}
		n += ihl
	case etherTypeIPv6:
		if n+40 > len(b) {
			return n
		}
		proto = b[n+6]
		n += 40
	default:
		return n
	}
	switch proto {
	case 6: // TCP
		if n+20 <= len(b) {
			n += int(b[n+12]>>4) * 4
		}
	case 17: // UDP
		n += 8
	}
	return min(n, rxHeaderCopy, len(b))
}
