package igb

import (
	"errors"
	"fmt"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// zcRing is the RX buffer side of a queue held in zero-copy mode: each
// descriptor is armed with a frame of the socket's area, taken from its
// fill ring. It shares the descriptors with the half-page ring it
// replaces.
type zcRing struct {
	dma    kernel.DMA
	umem   *xsk.Umem
	sock   *xsk.Socket
	base   kernel.DMAAddr
	frames []uint64 // frame address+1 per descriptor, 0: none
	clean  int
	next   int
	armed  int
}

func (z *zcRing) reset() { z.clean, z.next, z.armed = 0, 0, 0 }

func (z *zcRing) advance() {
	z.clean = (z.clean + 1) % len(z.frames)
	z.armed--
}

// refill arms free descriptors with their own frame or a new one from the
// fill ring; it reports whether the tail moved.
func (z *zcRing) refill(write func(int, kernel.DMAAddr)) bool {
	moved := false
	fs := z.umem.FrameSize
	for z.armed < len(z.frames)-1 {
		i := z.next
		if z.frames[i] == 0 {
			a, ok := z.umem.Fill.Consume()
			if !ok {
				break
			}
			if a%uint64(fs) != 0 || z.umem.Check(a, fs) != nil {
				z.sock.Stats.RxInvalid.Add(1)
				continue
			}
			z.frames[i] = a + 1
		}
		addr := z.base + kernel.DMAAddr(z.frames[i]-1)
		if err := z.dma.SyncForDevice(addr, fs, kernel.Bidirectional); err != nil {
			break
		}
		write(i, addr)
		z.next = (i + 1) % len(z.frames)
		z.armed++
		moved = true
	}
	return moved
}

// frame is the address of the frame at clean.
func (z *zcRing) frame() uint64 { return z.frames[z.clean] - 1 }

// take hands the frame at clean to the application.
func (z *zcRing) take() { z.frames[z.clean] = 0 }

// peek syncs and returns the n received bytes of the frame at clean.
func (z *zcRing) peek(n int) ([]byte, error) {
	if z.frames[z.clean] == 0 {
		return nil, fmt.Errorf("rx descriptor %d completed with no frame", z.clean)
	}
	if n <= 0 || n > z.umem.FrameSize {
		return nil, fmt.Errorf("rx length %d outside 1..%d", n, z.umem.FrameSize)
	}
	a := z.frame()
	if err := z.dma.SyncForCPU(z.base+kernel.DMAAddr(a), n, kernel.Bidirectional); err != nil {
		return nil, err
	}
	return z.umem.Bytes(a, n), nil
}

// Bind implements xsk.Binder. In zero-copy mode the frame area is mapped
// once, the queue's half-page buffers are given up and the RX ring is
// re-armed from the socket's fill ring.
func (d *Device) Bind(qi int, s *xsk.Socket, m xsk.Mode) error {
	if qi < 0 || qi >= len(d.queues) {
		return fmt.Errorf("igb %s: bind queue %d: %w", d.name, qi, xsk.ErrNoQueue)
	}
	if s == nil || s.Umem == nil || s.RX == nil || s.TX == nil {
		return fmt.Errorf("igb %s: bind queue %d: incomplete socket", d.name, qi)
	}
	if m == xsk.ZeroCopy && s.Umem.FrameSize < d.MTU()+ethHdrLen+vlanTagLen {
		return fmt.Errorf("igb %s: bind queue %d: %d-byte frames hold no mtu %d frame", d.name, qi, s.Umem.FrameSize, d.MTU())
	}
	q := d.queues[qi]
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txMu.Lock()
	defer q.txMu.Unlock()
	if d.closed.Load() || q.stopped {
		return fmt.Errorf("igb %s: bind queue %d: %w", d.name, qi, xsk.ErrClosed)
	}
	if q.sock.Load() != nil {
		return fmt.Errorf("igb %s: bind queue %d: %w", d.name, qi, xsk.ErrBound)
	}
	if m == xsk.ZeroCopy {
		base, err := d.dma.Map(s.Umem.Area, kernel.Bidirectional)
		if err != nil {
			return fmt.Errorf("igb %s: bind queue %d: map %d-byte frame area: %w", d.name, qi, len(s.Umem.Area), err)
		}
		if err := q.setEnable(RXDCTL, false); err != nil {
			d.dma.Unmap(base, len(s.Umem.Area), kernel.Bidirectional)
			return err
		}
		if err := q.rx.Release(); err != nil {
			d.logf("%s: queue %d: release rx pages: %v", d.name, qi, err)
		}
		q.zcBase = base
		q.zc = &zcRing{dma: d.dma, umem: s.Umem, sock: s, base: base, frames: make([]uint64, q.rx.Descs.Len())}
		if err := q.startRx(); err != nil {
			q.zc = nil
			d.dma.Unmap(base, len(s.Umem.Area), kernel.Bidirectional)
			return errors.Join(err, q.startRx())
		}
	}
	q.mode = m
	q.txSock = s
	q.sock.Store(s)
	s.SetPoller(q.pollSocket)
	s.SetWaiter(q.Wait)
	d.logf("%s: queue %d bound to a socket (%v, %d frames)", d.name, qi, m, s.Umem.Frames())
	return nil
}

// pollSocket runs the queue for an application with no stack on it:
// frames the program passes have nowhere to go and are released.
func (q *queue) pollSocket(budget int) int {
	return q.Poll(budget, func(p *nic.RxPacket) {
		q.noStack.Add(1)
		p.Data.Release()
	})
}

// Unbind implements xsk.Binder.
func (d *Device) Unbind(qi int) error {
	if qi < 0 || qi >= len(d.queues) {
		return fmt.Errorf("igb %s: unbind queue %d: %w", d.name, qi, xsk.ErrNoQueue)
	}
	q := d.queues[qi]
	q.rxMu.Lock()
	defer q.rxMu.Unlock()
	q.txMu.Lock()
	defer q.txMu.Unlock()
	if q.sock.Load() == nil {
		return fmt.Errorf("igb %s: unbind queue %d: no socket bound", d.name, qi)
	}
	return q.detachLocked(!d.closed.Load() && !q.stopped)
}

// detachLocked takes the queue back from its socket: sends in flight are
// given time to finish and then returned through the completion ring,
// armed frames are returned through it too, the area is unmapped, and with
// restart the queue goes back to half-page buffers. rxMu and txMu are held.
func (q *queue) detachLocked(restart bool) error {
	s := q.sock.Load()
	if s == nil {
		return nil
	}
	d := q.d
	s.SetPoller(nil)
	s.SetWaiter(nil)
	var errs []error
	if q.zcTx > 0 && !q.stopped {
		d.waitFor(10*time.Millisecond, func() bool {
			q.reclaim()
			return q.zcTx == 0
		})
	}
	if q.zcTx > 0 {
		// The device kept them: stop it before the frames go back.
		if err := q.setEnable(TXDCTL, false); err != nil {
			errs = append(errs, err)
		}
		for i := range q.txFrame {
			q.completeFrame(i, true)
		}
		if restart {
			errs = append(errs, q.startTxLocked())
		}
	}
	if z := q.zc; z != nil {
		if err := q.setEnable(RXDCTL, false); err != nil {
			errs = append(errs, err)
		}
		for i, a := range z.frames {
			if a != 0 {
				returnFrame(s, a-1)
				s.Stats.RxReturned.Add(1)
				z.frames[i] = 0
			}
		}
		if err := d.dma.Unmap(z.base, len(s.Umem.Area), kernel.Bidirectional); err != nil {
			errs = append(errs, fmt.Errorf("unmap frame area: %w", err))
		}
		q.zc, q.zcBase = nil, 0
		if restart {
			errs = append(errs, q.startRx())
		}
	}
	q.sock.Store(nil)
	q.txSock = nil
	q.mode = xsk.Copy
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("igb %s: queue %d: detach socket: %w", d.name, q.idx, err)
	}
	return nil
}

// returnFrame gives a frame back through the completion ring, which holds
// every frame of the area.
func returnFrame(s *xsk.Socket, a uint64) {
	if !s.Umem.Comp.Produce(a) {
		s.Stats.CompOverflow.Add(1)
	}
}

// completeFrame finishes the zero-copy send held by TX descriptor i, if
// any; txMu is held.
func (q *queue) completeFrame(i int, aborted bool) {
	a := q.txFrame[i]
	if a == 0 {
		return
	}
	q.txFrame[i] = 0
	q.zcTx--
	if s := q.txSock; s != nil {
		returnFrame(s, a-1)
		if aborted {
			s.Stats.TxAborted.Add(1)
		} else {
			s.Stats.TxSent.Add(1)
		}
	}
}

// sendSocket moves up to budget frames from the socket's TX ring to the
// device: by reference in zero-copy mode, copied in copy mode. A frame is
// taken only when the completion ring has room for it; txMu is held.
func (q *queue) sendSocket(s *xsk.Socket, budget int) {
	comp := s.Umem.Comp
	for k := 0; k < budget && q.tx.Free() > 0 && comp.Free() > q.zcTx; k++ {
		desc, ok := s.TX.Consume()
		if !ok {
			return
		}
		n := int(desc.Len)
		if n < ethHdrLen || n > txBounceLen || s.Umem.Check(desc.Addr, n) != nil {
			s.Stats.TxInvalid.Add(1)
			returnFrame(s, desc.Addr)
			continue
		}
		if q.zc == nil || q.mode != xsk.ZeroCopy {
			if q.sendCopy(s.Umem.Bytes(desc.Addr, n)) {
				s.Stats.TxSent.Add(1)
			} else {
				s.Stats.TxInvalid.Add(1)
			}
			returnFrame(s, desc.Addr)
			continue
		}
		addr := q.zcBase + kernel.DMAAddr(desc.Addr)
		if err := q.d.dma.SyncForDevice(addr, n, kernel.Bidirectional); err != nil {
			s.Stats.TxInvalid.Add(1)
			returnFrame(s, desc.Addr)
			continue
		}
		q.tx.Begin()
		i := q.tx.Claim()
		encodeTxData(q.tx.Descs.At(i), uint64(addr), n, ADVTXD_DCMD_IFCS|ADVTXD_DCMD_EOP|ADVTXD_DCMD_RS, 0, n)
		q.tx.Commit(nil)
		q.txFrame[i] = desc.Addr + 1
		q.zcTx++
		q.tx.Stats.Packets.Add(1)
		q.tx.Stats.Frames.Add(1)
		q.tx.Stats.Bytes.Add(uint64(n))
		q.txDirty = true
	}
}

// SetProgram implements xsk.Binder.
func (d *Device) SetProgram(qi int, p xsk.Program) error {
	if qi < 0 || qi >= len(d.queues) {
		return fmt.Errorf("igb %s: program on queue %d: %w", d.name, qi, xsk.ErrNoQueue)
	}
	if p == nil {
		d.queues[qi].prog.Store(nil)
		return nil
	}
	d.queues[qi].prog.Store(&p)
	return nil
}
