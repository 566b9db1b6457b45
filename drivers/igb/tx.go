package igb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/ether9/ether9/drivers/advdesc"

	"github.com/ether9/ether9/drivers/gso"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// errRingFull stops a batch: the packet was not taken.
var errRingFull = errors.New("tx ring full")

const (
	etherTypeIPv4 = 0x0800
	etherTypeVLAN = 0x8100
)

// Transmit implements nic.Queue. Packets are queued in order until the
// ring is full; the tail is written once for the batch. A malformed packet
// stops the batch with an error and is not taken.
func (q *queue) Transmit(pkts []*nic.TxPacket) (int, error) {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	if q.stopped {
		return 0, fmt.Errorf("igb %s: transmit on a closed queue %d", q.d.name, q.idx)
	}
	taken := 0
	var err error
	for _, p := range pkts {
		if e := q.queue(p); e != nil {
			if errors.Is(e, errRingFull) {
				q.tx.Stats.Full.Add(1)
			} else {
				q.tx.Stats.Drops.Add(1)
				err = fmt.Errorf("igb %s: queue %d: packet %d: %w", q.d.name, q.idx, taken, e)
			}
			break
		}
		taken++
	}
	if taken > 0 {
		q.doorbell()
	}
	return taken, err
}

// doorbell tells the device about new descriptors; txMu is held.
func (q *queue) doorbell() {
	q.d.regs.Write32(qreg(TDT, q.idx), uint32(q.tx.Tail()))
	q.tx.Stats.Doorbells.Add(1)
}

// queue writes one packet's descriptors; on error nothing of it stays.
func (q *queue) queue(p *nic.TxPacket) error {
	d := q.d
	size := int(p.Data.Size())
	if size < ethHdrLen {
		return fmt.Errorf("frame of %d bytes", size)
	}
	q.tx.Begin()
	var err error
	switch {
	case p.GSO != nic.GSONone && d.tso.Load():
		err = q.queueTSO(p)
	case p.GSO != nic.GSONone:
		err = q.queueSoftGSO(p)
	default:
		if size > d.MTU()+ethHdrLen+vlanTagLen {
			return fmt.Errorf("frame of %d bytes above mtu %d and not GSO", size, d.MTU())
		}
		err = q.queueFrame(p)
	}
	if err != nil {
		q.tx.Abort()
		return err
	}
	q.tx.Stats.Packets.Add(1)
	q.tx.Stats.Bytes.Add(uint64(size))
	return nil
}

func (q *queue) claim() (int, error) {
	i := q.tx.Claim()
	if i < 0 {
		return -1, errRingFull
	}
	return i, nil
}

// macLen is the L2 header length and whether the frame carries IPv4.
func macLen(b *buffer.Buffer) (int, bool) {
	var h [18]byte
	n, _ := b.ReadAt(h[:], 0)
	if n < ethHdrLen {
		return ethHdrLen, false
	}
	et, l := binary.BigEndian.Uint16(h[12:]), ethHdrLen
	if et == etherTypeVLAN && n >= ethHdrLen+vlanTagLen {
		et, l = binary.BigEndian.Uint16(h[16:]), ethHdrLen+vlanTagLen
	}
	return l, et == etherTypeIPv4
}

// queueFrame sends one frame of at most MTU size, with checksum insertion
// through a context descriptor when asked.
func (q *queue) queueFrame(p *nic.TxPacket) error {
	size := int(p.Data.Size())
	var popts uint32
	if p.NeedsCsum {
		start, at := int(p.CsumStart), int(p.CsumStart)+int(p.CsumOffset)
		ml, v4 := macLen(&p.Data)
		iplen := start - ml
		if iplen < 20 || iplen > advdesc.MaxIPLen || at+2 > size {
			return fmt.Errorf("checksum at %d+%d in a %d-byte frame with a %d-byte L2 header", p.CsumStart, p.CsumOffset, size, ml)
		}
		ctx := advdesc.Context{MACLen: ml, IPLen: iplen}
		switch p.CsumOffset {
		case 16:
			ctx.TUCMD = advdesc.TXD_TUCMD_L4T_TCP
		case 6:
			ctx.TUCMD = advdesc.TXD_TUCMD_L4T_UDP
		default:
			return fmt.Errorf("checksum offset %d is neither TCP nor UDP", p.CsumOffset)
		}
		if v4 {
			ctx.TUCMD |= advdesc.TXD_TUCMD_IPV4
		}
		i, err := q.claim()
		if err != nil {
			return err
		}
		ctx.Encode(q.tx.Descs.At(i))
		popts = advdesc.TXD_POPTS_TXSM
		q.tx.Stats.Csum.Add(1)
	}
	if err := q.queueData(&p.Data, 0, 0, popts, size); err != nil {
		return err
	}
	q.tx.Stats.Frames.Add(1)
	q.tx.Commit(&p.Data)
	return nil
}

// queueData writes data descriptors for buf from offset off: a small
// remainder is copied into bounce space, the rest mapped view by view.
// paylen goes on the first descriptor; the last gets EOP and RS.
func (q *queue) queueData(buf *buffer.Buffer, off int, dcmd, popts uint32, paylen int) error {
	tx := q.tx
	n := int(buf.Size()) - off
	dcmd |= advdesc.TXD_DCMD_IFCS
	if n <= txCopyMax {
		i, err := q.claim()
		if err != nil {
			return err
		}
		b, addr := tx.Bounce(i)
		buf.ReadAt(b[:n], int64(off))
		advdesc.EncodeData(tx.Descs.At(i), uint64(addr), n, dcmd|advdesc.TXD_DCMD_EOP|advdesc.TXD_DCMD_RS, popts, paylen)
		tx.Stats.Bounced.Add(1)
		return nil
	}
	last := -1
	var err error
	buf.SubApply(off, n, func(v *buffer.View) {
		if err != nil {
			return
		}
		b := v.AsSlice()
		var i int
		if i, err = q.claim(); err != nil {
			return
		}
		addr, e := tx.Map(i, b)
		if e != nil {
			err = e
			return
		}
		for len(b) > 0 {
			// One descriptor per device page: IOVA-contiguous pages
			// need not be physically contiguous, and a device model
			// that maps each descriptor's buffer at once (QEMU's)
			// drops the packet when they are not.
			k := min(len(b), advdesc.MaxPerData, kernel.PageSize-int(addr%kernel.PageSize))
			advdesc.EncodeData(tx.Descs.At(i), uint64(addr), k, dcmd, popts, paylen)
			popts, paylen = 0, 0
			last = i
			b, addr = b[k:], addr+kernel.DMAAddr(k)
			if len(b) > 0 {
				if i, err = q.claim(); err != nil {
					return
				}
			}
		}
	})
	if err != nil {
		return err
	}
	if last < 0 {
		return errors.New("empty frame")
	}
	advdesc.SetEOP(tx.Descs.At(last))
	return nil
}

// queueTSO hands a GSO packet to the hardware: a TSO context descriptor,
// the headers (as the hardware wants them) from bounce space, then the
// payload mapped in place.
func (q *queue) queueTSO(p *nic.TxPacket) error {
	tx := q.tx
	plan, err := gso.ForPacket(p, q.d.MTU(), txBounceLen)
	if err != nil {
		return err
	}
	hl := plan.HeaderLen()
	if hl > tx.BounceLen() || plan.L3Len > advdesc.MaxIPLen {
		return fmt.Errorf("headers of %d bytes too long for TSO", hl)
	}
	ctx := advdesc.Context{MACLen: plan.L2Len, IPLen: plan.L3Len, TUCMD: advdesc.TXD_TUCMD_L4T_TCP, L4Len: plan.L4Len, MSS: plan.MSS}
	popts := uint32(advdesc.TXD_POPTS_TXSM)
	if plan.Type == nic.GSOTCPv4 {
		ctx.TUCMD |= advdesc.TXD_TUCMD_IPV4
		popts |= advdesc.TXD_POPTS_IXSM
	}

	i, err := q.claim()
	if err != nil {
		return err
	}
	ctx.Encode(tx.Descs.At(i))
	if i, err = q.claim(); err != nil {
		return err
	}
	b, addr := tx.Bounce(i)
	copy(b, plan.TSOHeader())
	advdesc.EncodeData(tx.Descs.At(i), uint64(addr), hl, advdesc.TXD_DCMD_TSE|advdesc.TXD_DCMD_IFCS, popts, plan.Payload())
	if err := q.queueData(&p.Data, hl, advdesc.TXD_DCMD_TSE, 0, 0); err != nil {
		return err
	}
	tx.Stats.TSO.Add(1)
	tx.Stats.Frames.Add(uint64(plan.Segments))
	tx.Commit(&p.Data)
	return nil
}

// queueSoftGSO segments a GSO packet in software, one frame per bounce
// slot, checksums and all: TSO went off after the stack chose GSO.
func (q *queue) queueSoftGSO(p *nic.TxPacket) error {
	tx := q.tx
	plan, err := gso.ForPacket(p, q.d.MTU(), txBounceLen)
	if err != nil {
		return err
	}
	if plan.Segments > tx.Free() {
		return errRingFull
	}
	for k := 0; k < plan.Segments; k++ {
		i, err := q.claim()
		if err != nil {
			return err
		}
		b, addr := tx.Bounce(i)
		n, err := plan.Build(b, &p.Data, k)
		if err != nil {
			return err
		}
		dcmd := uint32(advdesc.TXD_DCMD_IFCS | advdesc.TXD_DCMD_EOP)
		if k == plan.Segments-1 {
			dcmd |= advdesc.TXD_DCMD_RS
		}
		advdesc.EncodeData(tx.Descs.At(i), uint64(addr), n, dcmd, 0, n)
	}
	tx.Stats.SoftGSO.Add(1)
	tx.Stats.Frames.Add(uint64(plan.Segments))
	tx.Commit(&p.Data)
	return nil
}

// sendCopy queues one frame copied into bounce space (a program's TX
// verdict, a copy-mode socket's send); txMu is held. The caller rings the
// doorbell.
func (q *queue) sendCopy(frame []byte) bool {
	if len(frame) < ethHdrLen || len(frame) > txBounceLen {
		q.tx.Stats.Drops.Add(1)
		return false
	}
	q.tx.Begin()
	i := q.tx.Claim()
	if i < 0 {
		q.tx.Stats.Full.Add(1)
		return false
	}
	b, addr := q.tx.Bounce(i)
	copy(b, frame)
	advdesc.EncodeData(q.tx.Descs.At(i), uint64(addr), len(frame), advdesc.TXD_DCMD_IFCS|advdesc.TXD_DCMD_EOP|advdesc.TXD_DCMD_RS, 0, len(frame))
	q.tx.Commit(nil)
	q.tx.Stats.Packets.Add(1)
	q.tx.Stats.Frames.Add(1)
	q.tx.Stats.Bytes.Add(uint64(len(frame)))
	q.tx.Stats.Bounced.Add(1)
	q.txDirty = true
	return true
}

// Reclaim implements nic.Queue.
func (q *queue) Reclaim() int {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	return q.reclaim()
}

// reclaim frees completed descriptors; a zero-copy frame goes back to its
// socket's completion ring. txMu is held.
func (q *queue) reclaim() int {
	if q.stopped {
		return 0
	}
	n, err := q.tx.Reclaim(func(i int) bool {
		if !advdesc.TxDone(q.tx.Descs.At(i)) {
			return false
		}
		q.completeFrame(i, false)
		return true
	})
	if err != nil {
		q.d.logf("%s: queue %d: tx reclaim: %v", q.d.name, q.idx, err)
	}
	return n
}
