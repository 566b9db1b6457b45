package mi225

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// txContext is what a context descriptor loads into one of a queue's two
// context slots.
type txContext struct {
	macLen, ipLen int
	vlan          uint16
	tucmd         uint32
	l4Len, mss    int
	valid         bool
}

// txQueue is one transmit queue's engine: the ring mechanics the family
// shares, and what this part's descriptors leave between them.
type txQueue struct {
	nicmodel.TxQueue
	q   int
	ctx [2]txContext

	first  uint32 // the packet's first data descriptor's CMD_TYPE_LEN
	olinfo uint32 // and its OLINFO_STATUS
}

func (tq *txQueue) reset() {
	*tq = txQueue{TxQueue: tq.TxQueue, q: tq.q}
	tq.Reset()
}

// txEngine is the transmit DMA engine, a queue engine per queue; txMu
// guards it.
type txEngine struct {
	q [Queues]txQueue
}

func (e *txEngine) reset() {
	for i := range e.q {
		e.q[i].q = i
		e.q[i].reset()
	}
}

// txRingLocked reads queue q's ring and line and whether the queue and
// the transmitter are enabled.
func (n *NIC) txRingLocked(q int) (nicmodel.TxRing, nicmodel.TxLine, bool) {
	r := n.regs
	ring := nicmodel.TxRing{
		Base:  uint64(r[TxQ(TDBAH, q)/4])<<32 | uint64(r[TxQ(TDBAL, q)/4]),
		Count: r[TxQ(TDLEN, q)/4] / descLen,
		Head:  r[TxQ(TDH, q)/4],
		Tail:  r[TxQ(TDT, q)/4],
	}
	line := nicmodel.TxLine{
		Port: n.port, Up: n.link.up,
		PSP: r[nicmodel.TCTL/4]&nicmodel.TctlPSP != 0, VET: uint16(r[nicmodel.VET/4]),
	}
	return ring, line, r[nicmodel.TCTL/4]&nicmodel.TctlEN != 0 && r[TxQ(TXDCTL, q)/4]&DctlEnable != 0
}

// kickTx runs queue q's transmit engine until its ring is empty, or for
// at most limit descriptors when limit is above zero: fetch the
// descriptors from TDH toward TDT, send their packets, write DD back
// where RS asks, move TDH.
func (n *NIC) kickTx(q int, limit uint32) {
	n.txMu.Lock()
	defer n.txMu.Unlock()
	tq := &n.tx.q[q]
	load := func() (nicmodel.TxRing, nicmodel.TxLine, bool) { return n.txRingLocked(q) }
	desc := func(d []byte) bool { return n.txDesc(tq, d) }
	done := func(k uint32) { n.txDoneLocked(tq, k) }
	if err := tq.Run(n.dma, &n.mu, limit, load, desc, done); err != nil {
		n.count(func(c *Counters) { c.TxDMAFaults++ })
	}
}

func (n *NIC) txDoneLocked(tq *txQueue, k uint32) {
	ring, t := &tq.Ring, &tq.Tally
	if h := TxQ(TDH, tq.q) / 4; n.regs[h] == ring.Head { // software did not move it meanwhile
		n.regs[h] = ring.Next(k)
	}
	n.counters.Add(t)
	t.AddStats(n.regs)
	if t.RS {
		n.queueEventLocked(tq.q, true)
	}
	if tq.q == 0 && n.regs[TxQ(TDH, 0)/4] == n.regs[TxQ(TDT, 0)/4] {
		n.otherCauseLocked(nicmodel.IntTXQE)
	}
}

// txDesc processes one descriptor and reports whether it asked for a
// status write-back (RS).
func (n *NIC) txDesc(tq *txQueue, d []byte) (rs bool) {
	le := binary.LittleEndian
	w2, w3 := le.Uint32(d[8:]), le.Uint32(d[12:])
	rs = w2&TxdCmdRS != 0
	if w2&TxdCmdDEXT == 0 { // legacy: the same length, EOP, RS and VLE bits
		n.txData(tq, le.Uint64(d[0:]), w2, w3)
		return rs
	}
	switch w2 >> TxdDTYPShift & 0xf {
	case TxdDTYPCtx:
		w0 := le.Uint32(d[0:])
		tq.ctx[w3>>4&1] = txContext{
			ipLen: int(w0 & TxdIPLenMask), macLen: int(w0 >> TxdMACLenShift & 0x7f),
			vlan: uint16(w0 >> 16), tucmd: w2,
			l4Len: int(w3 >> TxdL4LenShift & 0xff), mss: int(w3 >> TxdMSSShift),
			valid: true,
		}
	case TxdDTYPData:
		n.txData(tq, le.Uint64(d[0:]), w2, w3)
	default:
		tq.Tally.BadDesc++
	}
	return rs
}

// txData gathers one data descriptor's buffer into the packet and sends
// the packet at EOP, whose descriptor gives VLE and, in the legacy
// format, the VLAN tag.
func (n *NIC) txData(tq *txQueue, addr uint64, w2, w3 uint32) {
	if tq.Gather(n.dma, addr, int(w2&TxdLenMask)) {
		tq.first, tq.olinfo = w2, w3
	}
	if w2&TxdCmdEOP == 0 {
		return
	}
	p, ok := tq.End()
	switch {
	case !ok:
	case tq.first&TxdCmdDEXT == 0:
		n.txLegacy(tq, p, w2&TxdCmdVLE != 0, uint16(w3>>16))
	default:
		n.txPacket(tq, p)
	}
}

// txPacket sends a packet of advanced descriptors: as it is, with
// checksums inserted, or cut into TCP segments.
func (n *NIC) txPacket(tq *txQueue, p []byte) {
	t := &tq.Tally
	popts := tq.olinfo
	c := &tq.ctx[tq.olinfo>>4&1]
	vle := tq.first&TxdCmdVLE != 0
	paylen := int(tq.olinfo >> TxdPaylenShift)
	if tq.first&TxdCmdTSE != 0 {
		n.txSegment(tq, p, c, vle)
		return
	}
	if paylen != len(p) {
		t.BadDesc++ // a single send's PAYLEN is the whole packet's length
		return
	}
	if popts&(TxdPoptsIXSM|TxdPoptsTXSM) != 0 && !c.valid {
		t.BadDesc++
		return
	}
	if popts&TxdPoptsIXSM != 0 && !ipChecksum(p, c.macLen, c.ipLen) {
		t.BadDesc++
		return
	}
	if popts&TxdPoptsTXSM != 0 {
		cso, udp, ok := l4Field(c.tucmd)
		start := c.macLen + c.ipLen
		if !ok || !nicmodel.InsertL4Checksum(p, start, start+cso, len(p), 0, udp) {
			t.BadDesc++
			return
		}
	}
	tq.Send(p, vle, c.vlan)
}

// txLegacy sends a packet of legacy descriptors: with IC, the ones'
// complement of the sum from CSS to the end of the packet is stored at
// CSO (both from the first descriptor); VLE and the VLAN tag are the
// last one's.
func (n *NIC) txLegacy(tq *txQueue, p []byte, vle bool, vlan uint16) {
	if tq.first&TxdCmdIC != 0 {
		css, cso := int(tq.olinfo>>8&0xff), int(tq.first>>16&0xff)
		if !nicmodel.InsertL4Checksum(p, css, cso, len(p), 0, false) {
			tq.Tally.BadDesc++
			return
		}
	}
	tq.Send(p, vle, vlan)
}

// l4Field returns the checksum field's offset within the L4 header.
func l4Field(tucmd uint32) (off int, udp, ok bool) {
	switch tucmd & TucmdL4Mask {
	case TucmdL4TCP:
		return 16, false, true
	case TucmdL4UDP:
		return 6, true, true
	}
	return 0, false, false // SCTP's CRC32c is not modelled
}

// ipChecksum fills in the IPv4 header checksum of the header at
// [start, start+l). The I225 sums the header with its checksum field
// taken as zero, whatever software left there.
func ipChecksum(p []byte, start, l int) bool {
	if l < 20 || start < 0 || start+l > len(p) {
		return false
	}
	clear(p[start+10 : start+12])
	return nicmodel.InsertIPChecksum(p, start, start+10, start+l)
}

// txSegment is TCP segmentation: the header (MACLEN+IPLEN+L4LEN bytes)
// repeated in front of each MSS-sized piece of the payload, with the IP
// length, IPv4 identification, TCP sequence number and flags (FIN and PSH
// only on the last segment, CWR only on the first) and the checksums
// fixed up per segment. PAYLEN must be the payload's length. The I225
// has no TSCTFC: a refused set-up counts as a bad descriptor only.
func (n *NIC) txSegment(tq *txQueue, p []byte, c *txContext, vle bool) {
	t := &tq.Tally
	hdr := c.macLen + c.ipLen + c.l4Len
	ipv4 := c.tucmd&TucmdIPv4 != 0
	paylen := int(tq.olinfo >> TxdPaylenShift)
	if !c.valid || c.tucmd&TucmdL4Mask != TucmdL4TCP || c.mss == 0 || c.l4Len < 20 ||
		c.ipLen < 20 || len(p) <= hdr || paylen != len(p)-hdr {
		t.BadDesc++
		return
	}
	ip, tcp := c.macLen, c.macLen+c.ipLen
	ixsm := tq.olinfo&TxdPoptsIXSM != 0 && ipv4
	if ixsm {
		clear(p[ip+10 : ip+12]) // summed as zero, as ipChecksum does
	}
	tso := nicmodel.TSO{
		L3: ip, L4: tcp, HdrLen: hdr, MSS: c.mss, IPv4: ipv4, TCP: true,
		IPCSO: ip + 10, IPCSEnd: tcp, TUCSO: tcp + 16,
		IPCsum: ixsm, L4Csum: tq.olinfo&TxdPoptsTXSM != 0,
		Flags: nicmodel.DefaultFlagMasks,
	}
	if err := tq.Segment(&tso, p, vle, c.vlan); err != nil {
		t.BadDesc++
		return
	}
	t.TSO++
}
