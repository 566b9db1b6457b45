package igc

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
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100
	etherTypeQinQ = 0x88a8
)

// Transmit implements nic.Queue. Packets are queued in order until the
// ring is full; the tail is written once for the batch. A malformed packet
// stops the batch with an error and is not taken.
func (q *queue) Transmit(pkts []*nic.TxPacket) (int, error) {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	if q.txDone {
		return 0, fmt.Errorf("igc %s: transmit on closed queue %d", q.d.name, q.idx)
	}
	taken := 0
	var err error
	for _, p := range pkts {
		if e := q.queuePacket(p); e != nil {
			if errors.Is(e, errRingFull) {
				q.tx.Stats.Full.Add(1)
			} else {
				q.tx.Stats.Drops.Add(1)
				err = fmt.Errorf("igc %s: queue %d: packet %d: %w", q.d.name, q.idx, taken, e)
			}
			break
		}
		taken++
	}
	if taken > 0 {
		q.doorbell()
		q.txDirty = false
	}
	return taken, err
}

// doorbell tells the device about new descriptors; txMu is held.
func (q *queue) doorbell() {
	q.d.regs.Write32(qreg(TDT, q.idx), uint32(q.tx.Tail()))
	q.tx.Stats.Doorbells.Add(1)
}

// queuePacket writes one packet's descriptors; on error nothing of it
// stays in the ring.
func (q *queue) queuePacket(p *nic.TxPacket) error {
	size := int(p.Data.Size())
	if size < ethHdrLen {
		return fmt.Errorf("frame of %d bytes", size)
	}
	q.tx.Begin()
	var err error
	switch {
	case p.GSO != nic.GSONone && q.d.tso.Load():
		err = q.queueTSO(p)
	case p.GSO != nic.GSONone:
		err = q.queueSoftGSO(p)
	case size > q.d.MTU()+ethHdrLen+vlanTagLen:
		err = fmt.Errorf("frame of %d bytes above mtu %d and not GSO", size, q.d.MTU())
	default:
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
	if i := q.tx.Claim(); i >= 0 {
		return i, nil
	}
	return -1, errRingFull
}

// l2 is a frame's L2 header length and whether it carries IPv4.
func l2(b *buffer.Buffer) (int, bool) {
	var h [ethHdrLen + vlanTagLen]byte
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

// queueFrame sends one frame of at most MTU size, with a context
// descriptor for checksum insertion when asked.
func (q *queue) queueFrame(p *nic.TxPacket) error {
	size := int(p.Data.Size())
	var popts uint32
	if p.NeedsCsum {
		start, at := int(p.CsumStart), int(p.CsumStart)+int(p.CsumOffset)
		ml, v4 := l2(&p.Data)
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

// queueData writes data descriptors for buf from offset off: a short
// remainder is copied into bounce space, the rest mapped view by view.
// paylen and popts go on the first descriptor; the last gets EOP and RS.
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
			k := min(len(b), advdesc.MaxPerData)
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

// queueTSO hands a GSO packet to the device: a TSO context descriptor,
// the headers prepared for per-segment fix-up in bounce space, then the
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
// slot: TSO went off after the stack chose GSO.
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
// verdict); txMu is held and the caller rings the doorbell.
func (q *queue) sendCopy(frame []byte) bool {
	if q.txDone || len(frame) < ethHdrLen || len(frame) > txBounceLen {
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
	if q.txDone {
		return 0
	}
	n, err := q.tx.Reclaim(func(i int) bool { return advdesc.TxDone(q.tx.Descs.At(i)) })
	if err != nil {
		q.d.logf("%s: queue %d: tx reclaim: %v", q.d.name, q.idx, err)
	}
	return n
}
