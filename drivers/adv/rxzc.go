package adv

import (
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/drivers/xsk"
	"gvisor.dev/gvisor/pkg/buffer"
)

// ZeroCopy is a queue's receive side while a socket's frames are armed in
// its ring: the device writes each frame at a socket frame's start, the
// packet program sees it there, and the socket keeps it unless the stack
// gets a copy or it goes back out.
type ZeroCopy struct {
	X     *xsk.Queue
	Stats *ring.RxStats // the queue's receive counters
	Tx    *Queue        // where a program's TX verdict goes
}

// Clean runs the receive loop over up to len(pkts) completed
// descriptors, frames through prog, fills pkts[:n] with copies of the
// frames the program passes, then re-arms from the socket's fill ring.
// It returns n, the descriptors taken and whether the tail moved
// (X.Tail).
func (z ZeroCopy) Clean(descs *ring.Descs, pkts []nic.RxPacket, discard *bool, prog xsk.Program) (n, taken int, moved bool) {
	taken = ring.CleanRx(descs, z.X, FrameErrors, len(pkts), discard, z.Drop, func(desc []byte) {
		wb := DecodeRx(desc)
		if z.Frame(wb, prog, &pkts[n]) {
			n++
		}
	})
	return n, taken, z.X.Refill()
}

// Drop counts a refused frame; its socket frame stays armed.
func (z ZeroCopy) Drop(r ring.DropReason) {
	z.Stats.Drop(r)
	z.Stats.Recycled.Add(1)
}

// Frame takes a good frame the device wrote into a socket's frame through
// prog and acts on the verdict; it reports whether it filled p with a
// copy for the stack.
func (z ZeroCopy) Frame(wb Rx, prog xsk.Program, p *nic.RxPacket) bool {
	n := wb.Length
	b, v, err := z.X.RunZC(prog, n)
	if err != nil {
		z.Drop(ring.DropLength)
		return false
	}
	z.Stats.Frames.Add(1)
	z.Stats.Bytes.Add(uint64(n))
	passed := false
	switch v {
	case xsk.Pass:
		// The frame is the socket's: the stack gets a copy.
		*p = nic.RxPacket{Data: buffer.MakeWithData(b), CsumOK: wb.CsumOK(), Hash: wb.Hash}
		z.Stats.Copybreak.Add(1)
		passed = true
	case xsk.Tx:
		z.Tx.Mu.Lock()
		z.Tx.SendCopy(b)
		z.Tx.Mu.Unlock()
	case xsk.Redirect:
		return false // the socket has it
	}
	z.Stats.Recycled.Add(1)
	return passed
}

// StartRxZC programs the RX queue for the socket's frames, enables it and
// arms it from the fill ring; the frame starts at the buffer's start.
func (p *Pair) StartRxZC(t Thresholds) error {
	p.RxDescs.Clear()
	if err := p.M.StartRxQueue(p.Idx, p.RxDescs, p.X.RxFrameSize(), t); err != nil {
		return err
	}
	p.Discard = false
	p.X.Reset()
	p.X.Refill()
	p.M.SetRxTail(p.Idx, p.X.Tail())
	return nil
}

// cleanZC is the RX loop while the socket's frames are armed; RxMu is
// held.
func (p *Pair) cleanZC(pkts []nic.RxPacket) (n, taken int) {
	z := ZeroCopy{X: p.X, Stats: p.RxStats, Tx: &p.Txq}
	n, taken, moved := z.Clean(p.RxDescs, pkts, &p.Discard, p.prog)
	if moved {
		p.M.SetRxTail(p.Idx, p.X.Tail())
	}
	return n, taken
}
