package m82576

import (
	"encoding/binary"
	"errors"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

const numContexts = 2 // context slots per queue

// txContext is what an advanced context descriptor loads into its slot.
type txContext struct {
	vlan          uint16
	macLen, ipLen int
	ipv4          bool
	l4t           uint32
	mss, l4Len    int
}

// txQueue is one transmit queue's engine: the ring mechanics the family
// shares, and what this part's descriptors leave between them.
type txQueue struct {
	nicmodel.TxQueue
	q   uint32
	ctx [numContexts]txContext

	// What the packet's first descriptor said.
	dext   bool
	cmd    uint8  // its command
	olinfo uint32 // advanced: its olinfo_status
	vlan   uint16 // legacy: the VLAN field
	cso    uint8  // legacy: checksum offset and start
	css    uint8
}

func (tq *txQueue) reset() {
	*tq = txQueue{TxQueue: tq.TxQueue, q: tq.q}
	tq.Reset()
}

// txRingLocked reads queue q's ring and line and whether the queue and
// the transmitter are enabled.
func (n *NIC) txRingLocked(q uint32) (nicmodel.TxRing, nicmodel.TxLine, bool) {
	r := n.regs
	qo := q * queueSize
	ring := nicmodel.TxRing{
		Base:  uint64(r[(TDBAH+qo)/4])<<32 | uint64(r[(TDBAL+qo)/4]),
		Count: r[(TDLEN+qo)/4] / descLen, Head: r[(TDH+qo)/4], Tail: r[(TDT+qo)/4],
	}
	if wb := r[(TDWBAL+qo)/4]; wb&TdwbalEnable != 0 {
		ring.HeadWB = uint64(r[(TDWBAH+qo)/4])<<32 | uint64(wb&^3)
	}
	line := nicmodel.TxLine{
		Port: n.port, Up: n.linkUp,
		PSP: r[nicmodel.TCTL/4]&nicmodel.TctlPSP != 0, VET: uint16(r[nicmodel.VET/4]),
	}
	return ring, line, r[nicmodel.TCTL/4]&nicmodel.TctlEN != 0 && r[(TXDCTL+qo)/4]&TxdctlEnable != 0
}

// kickTx runs transmit queue q (or every queue) until its ring is empty,
// or for at most limit descriptors when limit is above zero: it fetches
// the descriptors software handed over (TDH toward TDT), sends their
// packets and reports completion where RS asks for it.
func (n *NIC) kickTx(q, limit uint32) {
	n.txMu.Lock()
	defer n.txMu.Unlock()
	if q != allQueues {
		n.runTx(q, limit)
		return
	}
	for q := range uint32(numQueues) {
		n.runTx(q, limit)
	}
}

// txAccess runs queue N's engine for an access to its TDH, TDT or TXDCTL
// when transmit is deferred (Options.DeferTx), before the access takes
// effect: a TDT write leaves the descriptors it hands over for a later
// touch, and a TDH read returns the head the work left. Other registers
// leave the queues alone, so a thread that receives, reads statistics or
// acknowledges causes never writes back a descriptor another thread
// reclaims; the one exception is the arming of the queue's vector
// (write32).
func (n *NIC) txAccess(off uint32) {
	if !n.txDefer.On {
		return
	}
	if q, reg, ok := queueReg(off, TDBAL); ok && (reg == TDH || reg == TDT || reg == TXDCTL) {
		n.kickTx(q, n.txDefer.PerTouch)
	}
}

func (n *NIC) runTx(q, limit uint32) {
	tq := &n.tx[q]
	tq.q = q
	load := func() (nicmodel.TxRing, nicmodel.TxLine, bool) { return n.txRingLocked(q) }
	desc := func(d []byte) bool { return n.txDesc(tq, d) }
	done := func(k uint32) { n.txDoneLocked(tq, k) }
	if err := tq.Run(n.dma, &n.mu, limit, load, desc, done); err != nil {
		n.mu.Lock()
		n.counters.TxDMAFaults++
		n.mu.Unlock()
	}
}

// txDoneLocked moves the head past a processed batch, adds the batch's
// statistics and signals the queue's cause.
func (n *NIC) txDoneLocked(tq *txQueue, k uint32) {
	ring, t := &tq.Ring, &tq.Tally
	qo := tq.q * queueSize
	if n.regs[(TDH+qo)/4] == ring.Head { // software did not move the head meanwhile
		n.regs[(TDH+qo)/4] = ring.Next(k)
	}
	n.counters.Add(t)
	n.counters.TxQueue[tq.q] += t.Packets
	t.AddStats(n.regs)
	nicmodel.AddStat(n.regs[:], PQGPTC+tq.q*0x100, t.Frames)
	nicmodel.AddStat(n.regs[:], PQGOTC+tq.q*0x100, t.Bytes)
	if t.RS {
		n.queueCauseLocked(tq.q, true)
	}
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
		tq.Tally.BadDesc++
	}
	return cmd&TxdRS != 0
}

// txData gathers one data (or legacy) descriptor's buffer into the packet
// and sends the packet at EOP.
func (n *NIC) txData(tq *txQueue, d []byte, dext bool, addr uint64, length int, cmd uint8) {
	le := binary.LittleEndian
	if tq.Gather(n.dma, addr, length) {
		tq.dext, tq.cmd = dext, cmd
		if dext {
			tq.olinfo = le.Uint32(d[12:])
		} else {
			tq.cso, tq.css, tq.vlan = d[10], d[13], le.Uint16(d[14:])
		}
	}
	if cmd&TxdEOP != 0 {
		if p, ok := tq.End(); ok {
			n.txPacket(tq, p)
		}
	}
}

// txPacket turns the gathered packet into frames on the wire: as it is,
// with checksums inserted, or cut into TCP segments.
func (n *NIC) txPacket(tq *txQueue, p []byte) {
	t := &tq.Tally
	vle := tq.cmd&TxdVLE != 0
	if !tq.dext {
		if tq.cmd&TxdIC != 0 && !nicmodel.InsertL4Checksum(p, int(tq.css), int(tq.cso), len(p), 0, false) {
			t.BadDesc++
		}
		tq.Send(p, vle, tq.vlan)
		return
	}
	c := &tq.ctx[tq.olinfo>>OlinfoIdxSh&(numContexts-1)]
	ixsm, txsm := tq.olinfo&OlinfoIXSM != 0, tq.olinfo&OlinfoTXSM != 0
	l3, l4 := c.macLen, c.macLen+c.ipLen
	if tq.cmd&TxdTSE != 0 {
		n.txSegment(tq, p, c, ixsm, txsm, vle)
		return
	}
	if ixsm && (!c.ipv4 || !nicmodel.InsertIPChecksum(p, l3, l3+10, l4)) {
		t.BadDesc++
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
			t.BadDesc++ // SCTP's CRC is not modelled
		}
	}
	tq.Send(p, vle, c.vlan)
}

// errPayLen is a TSO packet whose PAYLEN disagrees with its buffers.
var errPayLen = errors.New("m82576: TSO PAYLEN does not match the packet")

// txSegment is TCP segmentation offload from an advanced context: the
// headers (MACLEN + IPLEN + L4LEN bytes) are repeated in front of each
// MSS-sized piece of the PAYLEN bytes of payload.
func (n *NIC) txSegment(tq *txQueue, p []byte, c *txContext, ixsm, txsm, vle bool) {
	t := &tq.Tally
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
	case int(tq.olinfo>>OlinfoPayLenSh) != len(p)-hdr:
		err = errPayLen
	default:
		err = tq.Segment(&tso, p, vle, c.vlan)
	}
	if err != nil {
		t.TSOFail++
		t.BadDesc++
		return
	}
	t.TSO++
}
