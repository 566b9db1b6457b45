package advrx

import (
	"github.com/ether9/ether9/drivers/advdesc"
	"github.com/ether9/ether9/drivers/advtx"
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
	Tx    *advtx.Queue  // where a program's TX verdict goes
}

// Clean runs the receive loop over up to budget completed descriptors,
// frames through prog, then re-arms from the socket's fill ring. It
// returns the descriptors taken and whether the tail moved (X.Tail).
func (z ZeroCopy) Clean(descs *ring.Descs, budget int, discard *bool, prog xsk.Program, deliver func(*nic.RxPacket)) (int, bool) {
	n := CleanRx(descs, z.X, budget, discard, z.Drop, func(wb advdesc.Rx) { z.Frame(wb, prog, deliver) })
	return n, z.X.Refill()
}

// Drop counts a refused frame; its socket frame stays armed.
func (z ZeroCopy) Drop(r ring.DropReason) {
	z.Stats.Drop(r)
	z.Stats.Recycled.Add(1)
}

// Frame takes a good frame the device wrote into a socket's frame through
// prog and acts on the verdict.
func (z ZeroCopy) Frame(wb advdesc.Rx, prog xsk.Program, deliver func(*nic.RxPacket)) {
	n := wb.Length
	b, v, err := z.X.RunZC(prog, n)
	if err != nil {
		z.Drop(ring.DropLength)
		return
	}
	z.Stats.Frames.Add(1)
	z.Stats.Bytes.Add(uint64(n))
	switch v {
	case xsk.Pass:
		// The frame is the socket's: the stack gets a copy.
		deliver(&nic.RxPacket{Data: buffer.MakeWithData(b), CsumOK: wb.CsumOK(), Hash: wb.Hash})
		z.Stats.Copybreak.Add(1)
	case xsk.Tx:
		z.Tx.Mu.Lock()
		z.Tx.SendCopy(b)
		z.Tx.Mu.Unlock()
	case xsk.Redirect:
		return // the socket has it
	}
	z.Stats.Recycled.Add(1)
}
