package e1000e

import (
	"errors"
	"fmt"

	"github.com/ether9/ether9/drivers/gso"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// Transmit implements nic.Queue. Packets are queued in order until the
// ring is full; the tail register is written once for the whole batch. A
// malformed packet stops the batch with an error and is not taken.
func (q *queue) Transmit(pkts []*nic.TxPacket) (int, error) {
	d := q.d
	if d.closed.Load() {
		return 0, fmt.Errorf("e1000e %s: transmit on a closed device", d.name)
	}
	q.txMu.Lock()
	defer q.txMu.Unlock()
	if d.closed.Load() {
		return 0, fmt.Errorf("e1000e %s: transmit on a closed device", d.name)
	}
	tx := q.tx
	taken := 0
	var err error
	for _, p := range pkts {
		start := tx.Tail()
		keep := q.txInjectCopy(p)
		if e := q.queuePacket(p); e != nil {
			if keep != nil {
				keep.Data.Release()
			}
			if errors.Is(e, ring.ErrTxFull) {
				tx.Stats.Full.Add(1)
			} else {
				tx.Stats.Drops.Add(1)
				err = fmt.Errorf("e1000e %s: packet %d: %w", d.name, taken, e)
			}
			break
		}
		if keep != nil {
			q.armTx(start, keep)
		}
		taken++
	}
	if taken > 0 {
		d.regs.Write32(TDT, uint32(tx.Tail()))
		tx.Stats.Doorbells.Add(1)
	}
	return taken, err
}

// queuePacket writes one packet's descriptors; on any error nothing of it
// stays in the ring.
func (q *queue) queuePacket(p *nic.TxPacket) error {
	d, tx := q.d, q.tx
	size := int(p.Data.Size())
	if size < ethHdrLen {
		return fmt.Errorf("frame of %d bytes", size)
	}
	tx.Begin()
	var err error
	switch {
	case p.GSO != nic.GSONone && d.tso.Load():
		err = q.queueTSO(p)
	case p.GSO != nic.GSONone:
		err = q.queueSoftGSO(p)
	default:
		if size > int(d.mtu.Load())+ethHdrLen+vlanTagLen {
			return fmt.Errorf("frame of %d bytes above mtu %d and not GSO", size, d.mtu.Load())
		}
		err = q.queueFrame(p)
	}
	if err != nil {
		tx.Abort()
		return err
	}
	tx.Stats.Packets.Add(1)
	tx.Stats.Bytes.Add(uint64(size))
	return nil
}

func (q *queue) claim() (int, error) { return q.tx.ClaimDesc() }

// queueFrame sends one frame of at most MTU size, with checksum insertion
// when asked, copied into bounce space (queueData).
func (q *queue) queueFrame(p *nic.TxPacket) error {
	tx := q.tx
	var popts uint8
	if p.NeedsCsum {
		size := int(p.Data.Size())
		start, at := int(p.CsumStart), int(p.CsumStart)+int(p.CsumOffset)
		if start < ethHdrLen || at+2 > size || start > 255 || at > 255 {
			return fmt.Errorf("checksum at %d+%d in a %d-byte frame", p.CsumStart, p.CsumOffset, size)
		}
		i, err := q.claim()
		if err != nil {
			return err
		}
		txContext{tucss: uint8(start), tucso: uint8(at)}.encode(tx.Descs.At(i))
		popts = TXD_POPTS_TXSM
		tx.Stats.Csum.Add(1)
	}
	if err := q.queueData(&p.Data, 0, 0, popts); err != nil {
		return err
	}
	tx.Stats.Frames.Add(1)
	tx.Commit(&p.Data)
	return nil
}

// queueData writes data descriptors for buf (from offset off), after an
// optional header already placed: copied into bounce space up to
// txSplit.CopyMax, mapped beyond (ring.TxRing.Data). The last descriptor
// gets EOP and RS.
func (q *queue) queueData(buf *buffer.Buffer, off int, dcmd, popts uint8) error {
	dcmd |= TXD_CMD_IFCS
	return q.tx.Data(buf, off, q.txSplit, func(desc []byte, addr kernel.DMAAddr, n int, _, last bool) {
		cmd := dcmd
		if last {
			cmd |= TXD_CMD_EOP | TXD_CMD_RS
		}
		encodeTxData(desc, uint64(addr), n, cmd, popts)
	})
}

// queueTSO hands a GSO packet to the hardware: a TSO context descriptor,
// the headers (rewritten the way the hardware wants them) from bounce
// space, then the payload (queueData).
func (q *queue) queueTSO(p *nic.TxPacket) error {
	tx := q.tx
	plan, err := gso.ForPacket(p, int(q.d.mtu.Load()), txBounceLen)
	if err != nil {
		return err
	}
	hl := plan.HeaderLen()
	if hl > 255 || hl > tx.BounceLen() {
		return fmt.Errorf("headers of %d bytes too long for TSO", hl)
	}
	l4 := plan.L2Len + plan.L3Len
	ctx := txContext{
		tucss: uint8(l4), tucso: uint8(l4 + 16),
		paylen: uint32(plan.Payload()), hdrlen: uint8(hl), mss: uint16(plan.MSS),
		tucmd: TXD_CMD_TSE | TXD_CMD_TCP,
	}
	popts := uint8(TXD_POPTS_TXSM)
	if plan.Type == nic.GSOTCPv4 {
		ctx.ipcss, ctx.ipcso, ctx.ipcse = uint8(plan.L2Len), uint8(plan.L2Len+10), uint16(l4-1)
		ctx.tucmd |= TXD_CMD_IP
		popts |= TXD_POPTS_IXSM
	} else {
		ctx.ipcss = uint8(plan.L2Len)
	}

	i, err := q.claim()
	if err != nil {
		return err
	}
	ctx.encode(tx.Descs.At(i))
	if i, err = q.claim(); err != nil {
		return err
	}
	b, addr := tx.Bounce(i)
	copy(b, plan.TSOHeader())
	encodeTxData(tx.Descs.At(i), uint64(addr), hl, TXD_CMD_TSE|TXD_CMD_IFCS, popts)
	if err := q.queueData(&p.Data, hl, TXD_CMD_TSE, popts); err != nil {
		return err
	}
	tx.Stats.TSO.Add(1)
	tx.Stats.Frames.Add(uint64(plan.Segments))
	tx.Commit(&p.Data)
	return nil
}

// queueSoftGSO segments a GSO packet in software, one MTU frame per
// bounce slot, checksums and all: TSO went off after the stack chose GSO.
func (q *queue) queueSoftGSO(p *nic.TxPacket) error {
	plan, err := gso.ForPacket(p, int(q.d.mtu.Load()), txBounceLen)
	if err != nil {
		return err
	}
	return q.tx.SoftGSO(plan, p, func(desc []byte, addr kernel.DMAAddr, n int, last bool) {
		dcmd := uint8(TXD_CMD_IFCS | TXD_CMD_EOP)
		if last {
			dcmd |= TXD_CMD_RS
		}
		encodeTxData(desc, uint64(addr), n, dcmd, 0)
	})
}

// Reclaim implements nic.Queue.
func (q *queue) Reclaim() int {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	d := q.d
	if d.closed.Load() {
		return 0
	}
	q.settleTx()
	n, err := q.tx.Reclaim(func(i int) bool { return txDone(q.tx.Descs.At(i)) })
	if err != nil {
		d.logf("%s: tx reclaim: %v", d.name, err)
	}
	q.resendTx()
	return n
}
