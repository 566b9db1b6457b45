package nicmodel

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/ether9/ether9/kernel/sim/wire"
)

// What the transmit engines of the 82574, 82576 and I225 have in common.
const (
	DescLen     = 16        // legacy and advanced descriptors alike
	TxBatch     = 32        // descriptors fetched per DMA read
	MaxTxPacket = 256 << 10 // the largest packet (TSO) the parts gather
	MinFrame    = 60        // the shortest frame on the wire, without FCS
	EthHdrLen   = 14

	// TxStaDD is descriptor done: bit 0 of byte 12 in the legacy and
	// the advanced transmit write-back.
	TxStaDD = 1 << 0
)

// TxRing is a transmit ring as its registers read when a batch begins.
type TxRing struct {
	Base       uint64 // TDBAL, TDBAH
	Count      uint32 // TDLEN in descriptors
	Head, Tail uint32 // TDH, TDT

	// HeadWB is where the head is written after a batch in which a
	// descriptor asked for status, instead of DD in each (the 82576's
	// TDWBAL and TDWBAH); zero when off.
	HeadWB uint64
}

// Valid reports whether count, head and tail describe a ring.
func (r TxRing) Valid() bool { return r.Count != 0 && r.Head < r.Count && r.Tail < r.Count }

// Next is the head after k more descriptors.
func (r TxRing) Next(k uint32) uint32 { return (r.Head + k) % r.Count }

// batch is how many descriptors one read fetches from the head: up to the
// tail or the end of the ring, at most TxBatch.
func (r TxRing) batch() uint32 {
	k := r.Tail - r.Head
	if r.Tail < r.Head {
		k = r.Count - r.Head
	}
	return min(k, TxBatch)
}

// TxLine is where a batch's frames go and how they are shaped, as the
// registers said when it began.
type TxLine struct {
	Port wire.Port
	Up   bool   // the MAC sees the link up
	PSP  bool   // TCTL.PSP: pad short frames to MinFrame
	VET  uint16 // the EtherType of an inserted VLAN tag
}

// TxTally is what one batch did, gathered outside the register lock and
// added to the registers and counters after it.
type TxTally struct {
	Packets                     uint64 // packets taken from the ring; a TSO packet is one
	Frames, Bytes, Bcast, Mcast uint64 // frames on the wire; Bytes include the FCS
	Sizes                       [6]uint64
	TSO, TSOFail                uint64 // packets segmented, and refused for a bad set-up
	NoLink, DMAFaults, BadDesc  uint64
	RS                          bool // a descriptor asked for status
}

// AddStats adds the tally to the transmit statistics in register file r
// (indexed by offset/4). TSCTFC counts TSOFail, which a part without the
// register leaves at zero.
func (t *TxTally) AddStats(r []uint32) {
	AddStat(r, GPTC, t.Frames)
	AddStat(r, TPT, t.Frames)
	AddStat64(r, GOTCL, t.Bytes)
	AddStat64(r, TOTL, t.Bytes)
	AddStat(r, BPTC, t.Bcast)
	AddStat(r, MPTC, t.Mcast)
	AddStat(r, TSCTC, t.TSO)
	AddStat(r, TSCTFC, t.TSOFail)
	for i, v := range t.Sizes {
		AddStat(r, PTC64+4*uint32(i), v)
	}
}

// TxCounters are a model's own transmit counters, for tests.
type TxCounters struct {
	TxPackets   uint64 // packets taken from a ring (a TSO packet is one)
	TxFrames    uint64 // frames put on the wire
	TxTSO       uint64 // packets segmented
	TxNoLink    uint64 // frames dropped because the link was down
	TxDMAFaults uint64 // DMA accesses the IOMMU refused
	TxBadDesc   uint64 // descriptors or offload set-ups the model rejected
}

// Add counts a batch.
func (c *TxCounters) Add(t *TxTally) {
	c.TxPackets += t.Packets
	c.TxFrames += t.Frames
	c.TxTSO += t.TSO
	c.TxNoLink += t.NoLink
	c.TxDMAFaults += t.DMAFaults
	c.TxBadDesc += t.BadDesc
}

// TxQueue is one transmit queue's DMA engine, less what the part's
// descriptors mean: it fetches the descriptors software handed over,
// writes their status back, gathers buffers into packets, cuts TSO
// packets into frames and puts frames on the wire, tallying what it did.
// The model serialises its use.
type TxQueue struct {
	Ring  TxRing  // the batch's ring
	Line  TxLine  // and its line
	Tally TxTally // what the batch did

	pkt      []byte // the packet being gathered, first descriptor to EOP
	inPkt    bool
	spoilt   bool // a buffer read failed or the packet outgrew MaxTxPacket
	descs    [TxBatch * DescLen]byte
	seg, tag []byte
	pad      [MinFrame]byte
}

// Reset drops the packet being gathered, as a device reset does; the
// buffers are kept for reuse.
func (q *TxQueue) Reset() {
	q.pkt, q.inPkt, q.spoilt = q.pkt[:0], false, false
	q.Tally = TxTally{}
}

// Run processes the ring until it is empty or, with limit above zero,
// until limit descriptors are processed (a packet may be left half
// gathered: the next Run goes on with it). load returns the ring and
// line as the registers stand, or false when the queue is off. Each
// descriptor fetched goes to desc, which reports whether it asked for
// status (RS); done follows each batch with the number of descriptors
// processed, Ring and Tally still those of the batch, to move TDH and add
// the statistics. load and done run with regs, the model's register lock,
// held; desc, the DMA and the wire run without it. Run returns a
// descriptor fetch the IOMMU refused, which stalls the queue.
func (q *TxQueue) Run(dma DMA, regs sync.Locker, limit uint32, load func() (TxRing, TxLine, bool), desc func(d []byte) (rs bool), done func(k uint32)) error {
	for left := limit; limit == 0 || left > 0; {
		regs.Lock()
		ring, line, ok := load()
		regs.Unlock()
		if !ok || !ring.Valid() || ring.Head == ring.Tail {
			return nil
		}
		k := ring.batch()
		if limit > 0 {
			k = min(k, left)
			left -= k
		}
		descs := q.descs[:k*DescLen]
		at := ring.Base + uint64(ring.Head)*DescLen
		if err := dma.Read(at, descs); err != nil {
			return fmt.Errorf("nicmodel: transmit descriptors at %#x: %w", at, err)
		}
		q.Ring, q.Line, q.Tally = ring, line, TxTally{}
		for i := range k {
			d := descs[i*DescLen : (i+1)*DescLen]
			if !desc(d) {
				continue
			}
			q.Tally.RS = true
			if ring.HeadWB != 0 {
				continue
			}
			d[12] |= TxStaDD
			if err := dma.Write(at+uint64(i)*DescLen+12, d[12:16]); err != nil {
				q.Tally.DMAFaults++
			}
		}
		if ring.HeadWB != 0 && q.Tally.RS {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], ring.Next(k))
			if err := dma.Write(ring.HeadWB, b[:]); err != nil {
				q.Tally.DMAFaults++
			}
		}
		regs.Lock()
		done(k)
		regs.Unlock()
	}
	return nil
}

// Gather reads a data descriptor's buffer of length bytes at addr onto
// the packet, beginning one if none is being gathered; it reports whether
// this descriptor began it, for the caller to keep what a first
// descriptor says. Once a packet outgrows MaxTxPacket (a bad descriptor)
// or a buffer read fails (a DMA fault), the rest of its buffers are
// skipped and the packet is dropped at its end.
func (q *TxQueue) Gather(dma DMA, addr uint64, length int) (first bool) {
	if !q.inPkt {
		q.pkt, q.inPkt, q.spoilt, first = q.pkt[:0], true, false, true
	}
	if length <= 0 || q.spoilt {
		return first
	}
	if len(q.pkt)+length > MaxTxPacket {
		q.spoilt = true
		q.Tally.BadDesc++
		return first
	}
	old := len(q.pkt)
	q.pkt = Grow(q.pkt, old+length)
	if err := dma.Read(addr, q.pkt[old:]); err != nil {
		q.spoilt = true
		q.Tally.DMAFaults++
	}
	return first
}

// End closes the packet at its EOP descriptor and counts it. It returns
// the packet, valid until the next Gather, or false when it was spoilt.
func (q *TxQueue) End() ([]byte, bool) {
	q.inPkt = false
	q.Tally.Packets++
	return q.pkt, !q.spoilt
}

// Segment cuts packet p into frames as t says and sends each with Send.
func (q *TxQueue) Segment(t *TSO, p []byte, tag bool, vlan uint16) error {
	var err error
	q.seg, err = t.Segment(p, q.seg, func(f []byte) { q.Send(f, tag, vlan) })
	return err
}

// Send puts frame f on the wire: with tag, a VLAN tag of type Line.VET
// and value vlan inserted after the addresses; with Line.PSP, padded with
// zeros to MinFrame. It counts the frame in Tally, or why it was dropped.
func (q *TxQueue) Send(f []byte, tag bool, vlan uint16) {
	t := &q.Tally
	if q.Line.Port == nil || !q.Line.Up {
		t.NoLink++
		return
	}
	if len(f) < EthHdrLen {
		t.BadDesc++
		return
	}
	if tag {
		tagged := append(q.tag[:0], f[:12]...)
		tagged = binary.BigEndian.AppendUint16(tagged, q.Line.VET)
		tagged = binary.BigEndian.AppendUint16(tagged, vlan)
		f = append(tagged, f[12:]...)
		q.tag = f
	}
	if q.Line.PSP && len(f) < MinFrame {
		clear(q.pad[copy(q.pad[:], f):])
		f = q.pad[:]
	}
	q.Line.Port.Send(f)
	l := len(f) + FCSLen
	t.Frames++
	t.Bytes += uint64(l)
	switch {
	case IsBroadcast(f):
		t.Bcast++
	case f[0]&1 != 0:
		t.Mcast++
	}
	if l <= 1522 {
		t.Sizes[SizeBin(l)]++
	}
}

// Grow returns b resized to n bytes, its contents kept, reallocated only
// when it lacks the capacity.
func Grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b), 2048))
	copy(nb, b)
	return nb
}
