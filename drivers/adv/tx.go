package adv

// The transmit writer: a context descriptor for checksum insertion or
// TSO, data split into descriptors by ring.TxRing.Data (copied into
// bounce space up to CopyMax, mapped beyond), and software segmentation
// when TSO is off.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/gso"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

const (
	ethHdrLen  = 14
	vlanTagLen = 4

	etherTypeIPv4 = 0x0800
	etherTypeVLAN = 0x8100
)

// Writer queues packets on one TX ring. Callers serialise its use the way
// they serialise the ring's.
type Writer struct {
	Ring *ring.TxRing
	// CopyMax is the most data copied into bounce space rather than
	// mapped (ring.TxSplit).
	CopyMax int
	MTU     func() int   // read per packet
	TSO     *atomic.Bool // read per packet
}

// Batch queues packets in order until the ring is full; it returns how
// many it took. A malformed packet stops the batch with an error and is
// not taken. The caller rings the doorbell when any were taken.
func (w *Writer) Batch(pkts []*nic.TxPacket) (int, error) {
	for taken, p := range pkts {
		if err := w.Packet(p); err != nil {
			if errors.Is(err, ring.ErrTxFull) {
				w.Ring.Stats.Full.Add(1)
				return taken, nil
			}
			w.Ring.Stats.Drops.Add(1)
			return taken, fmt.Errorf("packet %d: %w", taken, err)
		}
	}
	return len(pkts), nil
}

// Packet writes one packet's descriptors; on error nothing of it stays in
// the ring.
func (w *Writer) Packet(p *nic.TxPacket) error {
	size := int(p.Data.Size())
	if size < ethHdrLen {
		return fmt.Errorf("frame of %d bytes", size)
	}
	tx := w.Ring
	tx.Begin()
	var err error
	switch mtu := w.MTU(); {
	case p.GSO != nic.GSONone && w.TSO.Load():
		err = w.tso(p, mtu)
	case p.GSO != nic.GSONone:
		err = w.softGSO(p, mtu)
	case size > mtu+ethHdrLen+vlanTagLen:
		err = fmt.Errorf("frame of %d bytes above mtu %d and not GSO", size, mtu)
	default:
		err = w.frame(p)
	}
	if err != nil {
		tx.Abort()
		return err
	}
	tx.Stats.Packets.Add(1)
	tx.Stats.Bytes.Add(uint64(size))
	return nil
}

// Copy queues one frame copied into bounce space (a program's TX
// verdict) and reports whether it was taken; the caller rings the
// doorbell.
func (w *Writer) Copy(frame []byte) bool {
	tx := w.Ring
	if len(frame) < ethHdrLen || len(frame) > tx.BounceLen() {
		tx.Stats.Drops.Add(1)
		return false
	}
	tx.Begin()
	i := tx.Claim()
	if i < 0 {
		tx.Stats.Full.Add(1)
		return false
	}
	b, addr := tx.Bounce(i)
	copy(b, frame)
	EncodeData(tx.Descs.At(i), uint64(addr), len(frame), TXD_DCMD_IFCS|TXD_DCMD_EOP|TXD_DCMD_RS, 0, len(frame))
	tx.Commit(nil)
	tx.Stats.Packets.Add(1)
	tx.Stats.Frames.Add(1)
	tx.Stats.Bytes.Add(uint64(len(frame)))
	tx.Stats.Bounced.Add(1)
	return true
}

func (w *Writer) claim() (int, error) { return w.Ring.ClaimDesc() }

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

// frame sends one frame of at most MTU size, with a context descriptor
// for checksum insertion when asked.
func (w *Writer) frame(p *nic.TxPacket) error {
	tx := w.Ring
	size := int(p.Data.Size())
	var popts uint32
	if p.NeedsCsum {
		start, at := int(p.CsumStart), int(p.CsumStart)+int(p.CsumOffset)
		ml, v4 := l2(&p.Data)
		iplen := start - ml
		if iplen < 20 || iplen > MaxIPLen || at+2 > size {
			return fmt.Errorf("checksum at %d+%d in a %d-byte frame with a %d-byte L2 header", p.CsumStart, p.CsumOffset, size, ml)
		}
		ctx := Context{MACLen: ml, IPLen: iplen}
		switch p.CsumOffset {
		case 16:
			ctx.TUCMD = TXD_TUCMD_L4T_TCP
		case 6:
			ctx.TUCMD = TXD_TUCMD_L4T_UDP
		default:
			return fmt.Errorf("checksum offset %d is neither TCP nor UDP", p.CsumOffset)
		}
		if v4 {
			ctx.TUCMD |= TXD_TUCMD_IPV4
		}
		i, err := w.claim()
		if err != nil {
			return err
		}
		ctx.Encode(tx.Descs.At(i))
		popts = TXD_POPTS_TXSM
		tx.Stats.Csum.Add(1)
	}
	if err := w.data(&p.Data, 0, 0, popts, size); err != nil {
		return err
	}
	tx.Stats.Frames.Add(1)
	tx.Commit(&p.Data)
	return nil
}

// data writes data descriptors for buf from offset off (ring.TxRing.Data
// says which are copied and which mapped). paylen and popts go on the
// first descriptor; the last gets EOP and RS.
func (w *Writer) data(buf *buffer.Buffer, off int, dcmd, popts uint32, paylen int) error {
	dcmd |= TXD_DCMD_IFCS
	return w.Ring.Data(buf, off, ring.TxSplit{CopyMax: w.CopyMax, MaxPerDesc: MaxPerData}, func(desc []byte, addr kernel.DMAAddr, n int, first, last bool) {
		cmd, po, pl := dcmd, uint32(0), 0
		if first {
			po, pl = popts, paylen
		}
		if last {
			cmd |= TXD_DCMD_EOP | TXD_DCMD_RS
		}
		EncodeData(desc, uint64(addr), n, cmd, po, pl)
	})
}

// tso hands a GSO packet to the device: a TSO context descriptor, the
// headers prepared for per-segment fix-up in bounce space, then the
// payload mapped in place.
func (w *Writer) tso(p *nic.TxPacket, mtu int) error {
	tx := w.Ring
	plan, err := gso.ForPacket(p, mtu, tx.BounceLen())
	if err != nil {
		return err
	}
	hl := plan.HeaderLen()
	if hl > tx.BounceLen() || plan.L3Len > MaxIPLen {
		return fmt.Errorf("headers of %d bytes too long for TSO", hl)
	}
	ctx := Context{MACLen: plan.L2Len, IPLen: plan.L3Len, TUCMD: TXD_TUCMD_L4T_TCP, L4Len: plan.L4Len, MSS: plan.MSS}
	popts := uint32(TXD_POPTS_TXSM)
	if plan.Type == nic.GSOTCPv4 {
		ctx.TUCMD |= TXD_TUCMD_IPV4
		popts |= TXD_POPTS_IXSM
	}
	i, err := w.claim()
	if err != nil {
		return err
	}
	ctx.Encode(tx.Descs.At(i))
	if i, err = w.claim(); err != nil {
		return err
	}
	b, addr := tx.Bounce(i)
	copy(b, plan.TSOHeader())
	EncodeData(tx.Descs.At(i), uint64(addr), hl, TXD_DCMD_TSE|TXD_DCMD_IFCS, popts, plan.Payload())
	if err := w.data(&p.Data, hl, TXD_DCMD_TSE, 0, 0); err != nil {
		return err
	}
	tx.Stats.TSO.Add(1)
	tx.Stats.Frames.Add(uint64(plan.Segments))
	tx.Commit(&p.Data)
	return nil
}

// softGSO segments a GSO packet in software, one frame per bounce slot:
// TSO went off after the stack chose GSO.
func (w *Writer) softGSO(p *nic.TxPacket, mtu int) error {
	plan, err := gso.ForPacket(p, mtu, w.Ring.BounceLen())
	if err != nil {
		return err
	}
	return w.Ring.SoftGSO(plan, p, func(desc []byte, addr kernel.DMAAddr, n int, last bool) {
		dcmd := uint32(TXD_DCMD_IFCS | TXD_DCMD_EOP)
		if last {
			dcmd |= TXD_DCMD_RS
		}
		EncodeData(desc, uint64(addr), n, dcmd, 0, n)
	})
}
