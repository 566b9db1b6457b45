package m82576

import (
	"encoding/binary"
	"errors"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/wire"
)

const (
	txBatch     = 32        // descriptors fetched per DMA read
	maxTxPacket = 256 << 10 // the largest TSO packet the hardware takes
	minFrame    = 60        // without FCS
	numContexts = 2         // context slots per queue
)

// txContext is what an advanced context descriptor loads into its slot.
type txContext struct {
	vlan          uint16
	macLen, ipLen int
	ipv4          bool
	l4t           uint32
	mss, l4Len    int
}

// txQueue is one transmit queue's engine state between descriptors.
type txQueue struct {
	ctx [numContexts]txContext

	// The packet being gathered, from its first descriptor to EOP.
	pkt    []byte
	inPkt  bool
	dext   bool
	cmd    uint8  // the first descriptor's command
	olinfo uint32 // the first advanced descriptor's olinfo_status
	vlan   uint16 // legacy: the VLAN field
	cso    uint8  // legacy: checksum offset and start
	css    uint8
	spoilt bool // a DMA read failed or the packet grew too large

	descs [txBatch * descLen]byte
	seg   []byte // a TSO segment being built
	tag   []byte // a frame with its VLAN tag inserted
	pad   [minFrame]byte
	ring  txRing
	t     txTally
}

func (tq *txQueue) reset() {
	*tq = txQueue{pkt: tq.pkt[:0], seg: tq.seg, tag: tq.tag}
}

// txTally collects one batch's statistics outside the register lock.
type txTally struct {
	frames, bytes, bcast, mcast, tso, tsoFail uint64
	sizes                                     [6]uint64
	noLink, dmaFaults, badDesc, packets       uint64
	rsDone                                    bool
}

// txRing is the register state one batch of descriptors runs under.
type txRing struct {
	q           uint32
	base        uint64
	count, head uint32
	tail        uint32
	ok          bool
	headWB      uint64 // TDWBA when head write-back is on, else 0
	port        wire.Port
	up, psp     bool
	vet         uint16
}

func (n *NIC) txRingLocked(q uint32) txRing {
	r := n.regs
	qo := q * queueSize
	count := r[(TDLEN+qo)/4] / descLen
	t := txRing{
		q:     q,
		base:  uint64(r[(TDBAH+qo)/4])<<32 | uint64(r[(TDBAL+qo)/4]),
		count: count, head: r[(TDH+qo)/4], tail: r[(TDT+qo)/4],
		port: n.port, up: n.linkUp,
		psp: r[TCTL/4]&TctlPSP != 0, vet: uint16(r[VET/4]),
	}
	if wb := r[(TDWBAL+qo)/4]; wb&TdwbalEnable != 0 {
		t.headWB = uint64(r[(TDWBAH+qo)/4])<<32 | uint64(wb&^3)
	}
	t.ok = r[TCTL/4]&TctlEN != 0 && r[(TXDCTL+qo)/4]&TxdctlEnable != 0 &&
		count != 0 && t.head < count && t.tail < count
	return t
}

// kickTx runs transmit queue q (or every queue) until its ring is empty:
// it fetches the descriptors software handed over (TDH up to TDT), sends
// their packets and reports completion where RS asks for it.
func (n *NIC) kickTx(q uint32) {
	n.txMu.Lock()
	defer n.txMu.Unlock()
	if q != allQueues {
		n.runTx(q)
		return
	}
	for q := range uint32(numQueues) {
		n.runTx(q)
	}
}

func (n *NIC) runTx(q uint32) {
	tq := &n.tx[q]
	for {
		n.mu.Lock()
		ring := n.txRingLocked(q)
		n.mu.Unlock()
		if !ring.ok || ring.head == ring.tail {
			return
		}
		k := ring.tail - ring.head
		if ring.tail < ring.head {
			k = ring.count - ring.head
		}
		k = min(k, txBatch)
		descs := tq.descs[:k*descLen]
		if err := n.dma.Read(ring.base+uint64(ring.head)*descLen, descs); err != nil {
			// A descriptor fetch the IOMMU refuses stalls the queue.
			n.mu.Lock()
			n.counters.TxDMAFaults++
			n.mu.Unlock()
			return
		}
		tq.t = txTally{}
		tq.ring = ring
		for i := range k {
			d := descs[i*descLen : (i+1)*descLen]
			if !n.txDesc(tq, d) {
				continue
			}
			tq.t.rsDone = true
			if ring.headWB != 0 {
				continue // head write-back replaces the DD write-backs
			}
			d[12] |= TxdStaDD
			addr := ring.base + uint64(ring.head+i)*descLen + 12
			if err := n.dma.Write(addr, d[12:16]); err != nil {
				tq.t.dmaFaults++
			}
		}
		n.mu.Lock()
		head := n.txDoneLocked(tq, k)
		n.mu.Unlock()
		if ring.headWB != 0 && tq.t.rsDone {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], head)
			if err := n.dma.Write(ring.headWB, b[:]); err != nil {
				n.mu.Lock()
				n.counters.TxDMAFaults++
				n.mu.Unlock()
			}
		}
	}
}

// txDoneLocked moves the head past a processed batch, adds the batch's
// statistics and signals the queue's cause. It returns the new head.
func (n *NIC) txDoneLocked(tq *txQueue, k uint32) uint32 {
	ring, t := &tq.ring, &tq.t
	qo := ring.q * queueSize
	if n.regs[(TDH+qo)/4] == ring.head { // software did not move the head meanwhile
		n.regs[(TDH+qo)/4] = (ring.head + k) % ring.count
	}
	c := &n.counters
	c.TxPackets += t.packets
	c.TxQueue[ring.q] += t.packets
	c.TxFrames += t.frames
	c.TxTSO += t.tso
	c.TxNoLink += t.noLink
	c.TxDMAFaults += t.dmaFaults
	c.TxBadDesc += t.badDesc
	n.statLocked(GPTC, t.frames)
	n.statLocked(TPT, t.frames)
	n.stat64Locked(GOTCL, t.bytes)
	n.stat64Locked(TOTL, t.bytes)
	n.statLocked(PQGPTC+ring.q*0x100, t.frames)
	n.statLocked(PQGOTC+ring.q*0x100, t.bytes)
	n.statLocked(BPTC, t.bcast)
	n.statLocked(MPTC, t.mcast)
	n.statLocked(TSCTC, t.tso)
	n.statLocked(TSCTFC, t.tsoFail)
	for i, v := range t.sizes {
		n.statLocked(PTC64+4*uint32(i), v)
	}
	if t.rsDone {
		n.queueCauseLocked(ring.q, true)
	}
	return n.regs[(TDH+qo)/4]
}

// txDesc processes one descriptor and reports whether it asked for a
// status write-back (RS).
func (n *NIC) txDesc(tq *txQueue, d []byte) (rs bool) {
	le := binary.LittleEndian
	cmd := d[11]
	if cmd&TxdDEXT == 0 {
		n.txData(tq, d, false, le.Uint64(d[0:]), int(le.Uint16(d[8:])), cmd)
		return cmd&TxdRS != 0
	}
	ctl := le.Uint32(d[8:])
	switch ctl >> 20 & 0xf {
	case DTypContext:
		vml := le.Uint32(d[0:])
		mli := le.Uint32(d[12:])
		tq.ctx[mli>>CtxIdxSh&(numContexts-1)] = txContext{
			vlan:   uint16(vml >> CtxVLANSh),
			macLen: int(vml >> CtxMACLenSh & 0x7f),
			ipLen:  int(vml & CtxIPLenMsk),
			ipv4:   ctl&TucmdIPv4 != 0,
			l4t:    ctl >> TucmdL4TSh & 3,
			mss:    int(mli >> CtxMSSSh),
			l4Len:  int(mli >> CtxL4LenSh & 0xff),
		}
	case DTypData:
		n.txData(tq, d, true, le.Uint64(d[0:]), int(ctl&0xffff), cmd)
	default:
		tq.t.badDesc++
	}
	return cmd&TxdRS != 0
}

// txData gathers one data (or legacy) descriptor's buffer into the packet
// and sends the packet at EOP.
func (n *NIC) txData(tq *txQueue, d []byte, dext bool, addr uint64, length int, cmd uint8) {
	le := binary.LittleEndian
	if !tq.inPkt {
		tq.inPkt, tq.dext, tq.spoilt, tq.cmd = true, dext, false, cmd
		tq.pkt = tq.pkt[:0]
		if dext {
			tq.olinfo = le.Uint32(d[12:])
		} else {
			tq.cso, tq.css, tq.vlan = d[10], d[13], le.Uint16(d[14:])
		}
	}
	if length > 0 && !tq.spoilt {
		if len(tq.pkt)+length > maxTxPacket {
			tq.spoilt = true
		} else {
			old := len(tq.pkt)
			tq.pkt = grow(tq.pkt, old+length)
			if err := n.dma.Read(addr, tq.pkt[old:]); err != nil {
				tq.spoilt = true
				tq.t.dmaFaults++
			}
		}
	}
	if cmd&TxdEOP != 0 {
		n.txPacket(tq)
		tq.inPkt = false
	}
}

// txPacket turns the gathered packet into frames on the wire: as it is,
// with checksums inserted, or cut into TCP segments.
func (n *NIC) txPacket(tq *txQueue) {
	t := &tq.t
	t.packets++
	if tq.spoilt {
		return
	}
	p := tq.pkt
	vle := tq.cmd&TxdVLE != 0
	if !tq.dext {
		if tq.cmd&TxdIC != 0 && !nicmodel.InsertL4Checksum(p, int(tq.css), int(tq.cso), len(p), 0, false) {
			t.badDesc++
		}
		n.txFrame(tq, p, vle, tq.vlan)
		return
	}
	c := &tq.ctx[tq.olinfo>>OlinfoIdxSh&(numContexts-1)]
	ixsm, txsm := tq.olinfo&OlinfoIXSM != 0, tq.olinfo&OlinfoTXSM != 0
	l3, l4 := c.macLen, c.macLen+c.ipLen
	if tq.cmd&TxdTSE != 0 {
		n.txSegment(tq, c, ixsm, txsm, vle)
		return
	}
	if ixsm && (!c.ipv4 || !nicmodel.InsertIPChecksum(p, l3, l3+10, l4)) {
		t.badDesc++
	}
	if txsm {
		ok := false
		switch c.l4t {
		case L4TTCP:
			ok = nicmodel.InsertL4Checksum(p, l4, l4+16, len(p), 0, false)
		case L4TUDP:
			ok = nicmodel.InsertL4Checksum(p, l4, l4+6, len(p), 0, true)
		}
		if !ok {
			t.badDesc++ // SCTP's CRC is not modelled
		}
	}
	n.txFrame(tq, p, vle, c.vlan)
}

// errPayLen is a TSO packet whose PAYLEN disagrees with its buffers.
var errPayLen = errors.New("m82576: TSO PAYLEN does not match the packet")

// txSegment is TCP segmentation offload from an advanced context: the
// headers (MACLEN + IPLEN + L4LEN bytes) are repeated in front of each
// MSS-sized piece of the PAYLEN bytes of payload.
func (n *NIC) txSegment(tq *txQueue, c *txContext, ixsm, txsm, vle bool) {
	t := &tq.t
	hdr := c.macLen + c.ipLen + c.l4Len
	tso := nicmodel.TSO{
		L3: c.macLen, L4: c.macLen + c.ipLen, HdrLen: hdr, MSS: c.mss,
		IPv4: c.ipv4, TCP: true,
		IPCSO: c.macLen + 10, IPCSEnd: c.macLen + c.ipLen, TUCSO: c.macLen + c.ipLen + 16,
		IPCsum: ixsm, L4Csum: txsm, Flags: nicmodel.DefaultFlagMasks,
	}
	var err error
	switch {
	case c.l4t != L4TTCP:
		err = nicmodel.ErrBadTSO
	case int(tq.olinfo>>OlinfoPayLenSh) != len(tq.pkt)-hdr:
		err = errPayLen
	default:
		tq.seg, err = tso.Segment(tq.pkt, tq.seg, func(f []byte) { n.txFrame(tq, f, vle, c.vlan) })
	}
	if err != nil {
		t.tsoFail++
		t.badDesc++
		return
	}
	t.tso++
}

// txFrame puts one frame on the wire: VLAN tag inserted when asked,
// padded to the minimum length when TCTL.PSP is set.
func (n *NIC) txFrame(tq *txQueue, f []byte, vle bool, vlan uint16) {
	ring, t := &tq.ring, &tq.t
	if ring.port == nil || !ring.up {
		t.noLink++
		return
	}
	if len(f) < ethHdrLen {
		t.badDesc++
		return
	}
	if vle {
		tagged := append(tq.tag[:0], f[:12]...)
		tagged = binary.BigEndian.AppendUint16(tagged, ring.vet)
		tagged = binary.BigEndian.AppendUint16(tagged, vlan)
		f = append(tagged, f[12:]...)
		tq.tag = f
	}
	if ring.psp && len(f) < minFrame {
		clear(tq.pad[copy(tq.pad[:], f):])
		f = tq.pad[:]
	}
	ring.port.Send(f)
	t.frames++
	l := len(f) + nicmodel.FCSLen
	t.bytes += uint64(l)
	switch {
	case nicmodel.IsBroadcast(f):
		t.bcast++
	case f[0]&1 != 0:
		t.mcast++
	}
	if l <= 1522 {
		t.sizes[nicmodel.SizeBin(l)]++
	}
}
