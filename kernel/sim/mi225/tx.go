package mi225

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/wire"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

const (
	txBatch     = 32        // descriptors fetched per DMA read
	maxTxPacket = 256 << 10 // the largest packet (TSO) the hardware gathers
)

// TCP flags TSO changes per segment: FIN and PSH only on the last
// segment, CWR only on the first.
const (
	tcpFIN = 0x01
	tcpPSH = 0x08
	tcpCWR = 0x80
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

// txQueueState is a transmit queue's state between descriptors.
type txQueueState struct {
	ctx [2]txContext

	pkt    []byte // the packet being gathered, first descriptor to EOP
	inPkt  bool
	first  uint32 // the first data descriptor's CMD_TYPE_LEN
	olinfo uint32 // and its OLINFO_STATUS
	eopCmd uint32 // the last descriptor's dword 2 (legacy: its VLE)
	eop    uint32 // and dword 3 (legacy: its VLAN tag)
	spoilt bool
}

// txEngine is the transmit DMA engine; txMu guards it.
type txEngine struct {
	q     [Queues]txQueueState
	descs [txBatch * descLen]byte
	seg   []byte
	tag   []byte
	ring  txRing
	t     txTally
}

func (e *txEngine) reset() {
	for i := range e.q {
		e.q[i] = txQueueState{pkt: e.q[i].pkt[:0]}
	}
}

// txTally collects statistics outside the register lock.
type txTally struct {
	frames, bytes, bcast, mcast, tso    uint64
	sizes                               [6]uint64
	noLink, dmaFaults, badDesc, packets uint64
	rsDone                              bool
}

// txRing is the register state one batch runs under.
type txRing struct {
	q                 int
	base              uint64
	count, head, tail uint32
	ok                bool
	port              wire.Port
	up                bool
	psp               bool
	vet               uint16
}

func (n *NIC) txRingLocked(q int) txRing {
	r := n.regs
	t := txRing{
		q:     q,
		base:  uint64(r[TxQ(TDBAH, q)/4])<<32 | uint64(r[TxQ(TDBAL, q)/4]),
		count: r[TxQ(TDLEN, q)/4] / descLen,
		head:  r[TxQ(TDH, q)/4],
		tail:  r[TxQ(TDT, q)/4],
		port:  n.port, up: n.link.up,
		psp: r[TCTL/4]&TctlPSP != 0, vet: uint16(r[VET/4]),
	}
	t.ok = r[TCTL/4]&TctlEN != 0 && r[TxQ(TXDCTL, q)/4]&DctlEnable != 0 &&
		t.count != 0 && t.head < t.count && t.tail < t.count
	return t
}

// kickTx runs queue q's transmit engine until its ring is empty: fetch
// the descriptors from TDH to TDT, send their packets, write DD back
// where RS asks, move TDH.
func (n *NIC) kickTx(q int) {
	n.txMu.Lock()
	defer n.txMu.Unlock()
	e := &n.tx
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
		descs := e.descs[:k*descLen]
		if err := n.dma.Read(ring.base+uint64(ring.head)*descLen, descs); err != nil {
			// A descriptor fetch the IOMMU refuses stalls the queue.
			n.count(func(c *Counters) { c.TxDMAFaults++ })
			return
		}
		e.t = txTally{}
		e.ring = ring
		for i := range k {
			d := descs[i*descLen : (i+1)*descLen]
			if n.txDesc(d) {
				d[12] |= TxdStaDD
				addr := ring.base + uint64(ring.head+i)*descLen + 12
				if err := n.dma.Write(addr, d[12:16]); err != nil {
					e.t.dmaFaults++
				}
				e.t.rsDone = true
			}
		}
		n.mu.Lock()
		n.txDoneLocked(ring, k)
		n.mu.Unlock()
	}
}

func (n *NIC) txDoneLocked(ring txRing, k uint32) {
	t := &n.tx.t
	if h := TxQ(TDH, ring.q) / 4; n.regs[h] == ring.head { // software did not move it meanwhile
		n.regs[h] = (ring.head + k) % ring.count
	}
	c := &n.counters
	c.TxPackets += t.packets
	c.TxFrames += t.frames
	c.TxTSO += t.tso
	c.TxNoLink += t.noLink
	c.TxDMAFaults += t.dmaFaults
	c.TxBadDesc += t.badDesc
	n.statLocked(GPTC, t.frames)
	n.statLocked(TPT, t.frames)
	n.stat64Locked(GOTCL, t.bytes)
	n.stat64Locked(TOTL, t.bytes)
	n.statLocked(BPTC, t.bcast)
	n.statLocked(MPTC, t.mcast)
	n.statLocked(TSCTC, t.tso)
	for i, v := range t.sizes {
		n.statLocked(PTC64+4*uint32(i), v)
	}
	if t.rsDone {
		n.queueEventLocked(ring.q, true)
	}
	if ring.q == 0 && n.regs[TxQ(TDH, 0)/4] == n.regs[TxQ(TDT, 0)/4] {
		n.otherCauseLocked(IntTXQE)
	}
}

// txDesc processes one descriptor and reports whether it asked for a
// status write-back (RS).
func (n *NIC) txDesc(d []byte) (rs bool) {
	le := binary.LittleEndian
	e := &n.tx
	qs := &e.q[e.ring.q]
	w2, w3 := le.Uint32(d[8:]), le.Uint32(d[12:])
	rs = w2&TxdCmdRS != 0
	if w2&TxdCmdDEXT == 0 { // legacy: the same length, EOP, RS and VLE bits
		n.txData(qs, le.Uint64(d[0:]), w2, w3)
		return rs
	}
	switch w2 >> TxdDTYPShift & 0xf {
	case TxdDTYPCtx:
		w0 := le.Uint32(d[0:])
		qs.ctx[w3>>4&1] = txContext{
			ipLen: int(w0 & TxdIPLenMask), macLen: int(w0 >> TxdMACLenShift & 0x7f),
			vlan: uint16(w0 >> 16), tucmd: w2,
			l4Len: int(w3 >> TxdL4LenShift & 0xff), mss: int(w3 >> TxdMSSShift),
			valid: true,
		}
		return w2&TxdCmdRS != 0
	case TxdDTYPData:
		n.txData(qs, le.Uint64(d[0:]), w2, w3)
		return rs
	}
	e.t.badDesc++
	return rs
}

// txData gathers one data descriptor's buffer into the packet and sends
// the packet at EOP.
func (n *NIC) txData(qs *txQueueState, addr uint64, w2, w3 uint32) {
	e := &n.tx
	if !qs.inPkt {
		qs.inPkt, qs.spoilt = true, false
		qs.pkt = qs.pkt[:0]
		qs.first, qs.olinfo = w2, w3
	}
	length := int(w2 & TxdLenMask)
	if length > 0 && !qs.spoilt {
		if len(qs.pkt)+length > maxTxPacket {
			qs.spoilt = true
			e.t.badDesc++
		} else {
			old := len(qs.pkt)
			qs.pkt = grow(qs.pkt, old+length)
			if err := n.dma.Read(addr, qs.pkt[old:]); err != nil {
				qs.spoilt = true
				e.t.dmaFaults++
			}
		}
	}
	if w2&TxdCmdEOP != 0 {
		qs.eopCmd, qs.eop = w2, w3
		n.txPacket(qs)
		qs.inPkt = false
	}
}

func grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b), 2048))
	copy(nb, b)
	return nb
}

// txPacket sends a gathered packet: as it is, with checksums inserted,
// or cut into TCP segments.
func (n *NIC) txPacket(qs *txQueueState) {
	e := &n.tx
	e.t.packets++
	if qs.spoilt {
		return
	}
	p := qs.pkt
	if qs.first&TxdCmdDEXT == 0 {
		n.txLegacy(qs)
		return
	}
	popts := qs.olinfo
	c := &qs.ctx[qs.olinfo>>4&1]
	vle := qs.first&TxdCmdVLE != 0
	paylen := int(qs.olinfo >> TxdPaylenShift)
	if qs.first&TxdCmdTSE != 0 {
		n.txSegment(qs, c, vle)
		return
	}
	if paylen != len(p) {
		e.t.badDesc++ // a single send's PAYLEN is the whole packet's length
		return
	}
	if popts&(TxdPoptsIXSM|TxdPoptsTXSM) != 0 && !c.valid {
		e.t.badDesc++
		return
	}
	if popts&TxdPoptsIXSM != 0 && !ipChecksum(p, c.macLen, c.ipLen) {
		e.t.badDesc++
		return
	}
	if popts&TxdPoptsTXSM != 0 {
		cso, udp, ok := l4Field(c.tucmd)
		start := c.macLen + c.ipLen
		if !ok || !l4Checksum(p, start, start+cso, 0, udp) {
			e.t.badDesc++
			return
		}
	}
	n.txFrame(p, vle, c.vlan)
}

// txLegacy sends a packet of legacy descriptors: with IC, the ones'
// complement of the sum from CSS to the end of the packet is stored at
// CSO (both from the first descriptor); VLE and the VLAN tag are the
// last one's.
func (n *NIC) txLegacy(qs *txQueueState) {
	p := qs.pkt
	if qs.first&TxdCmdIC != 0 {
		css, cso := int(qs.olinfo>>8&0xff), int(qs.first>>16&0xff)
		if !l4Checksum(p, css, cso, 0, false) {
			n.tx.t.badDesc++
			return
		}
	}
	n.txFrame(p, qs.eopCmd&TxdCmdVLE != 0, uint16(qs.eop>>16))
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
// [start, start+l).
func ipChecksum(p []byte, start, l int) bool {
	if l < 20 || start+l > len(p) {
		return false
	}
	h := p[start : start+l]
	h[10], h[11] = 0, 0
	binary.BigEndian.PutUint16(h[10:], ^checksum.Checksum(h, 0))
	return true
}

// l4Checksum stores a TCP or UDP checksum: the ones' complement of the sum
// of the segment from start, the field included as software left it (the
// pseudo-header sum), plus extra (the L4 length TSO adds per segment).
// UDP sends 0 as 0xffff.
func l4Checksum(p []byte, start, cso int, extra uint16, udp bool) bool {
	if start >= len(p) || cso+2 > len(p) {
		return false
	}
	s := ^checksum.Combine(checksum.Checksum(p[start:], 0), extra)
	if udp && s == 0 {
		s = 0xffff
	}
	binary.BigEndian.PutUint16(p[cso:], s)
	return true
}

// txSegment is TCP segmentation: the header (MACLEN+IPLEN+L4LEN bytes)
// repeated in front of each MSS-sized piece of the payload, with the IP
// length, IPv4 identification, TCP sequence number and flags and the
// checksums fixed up per segment. PAYLEN must be the payload's length.
func (n *NIC) txSegment(qs *txQueueState, c *txContext, vle bool) {
	e := &n.tx
	p := qs.pkt
	hdr := c.macLen + c.ipLen + c.l4Len
	ipv4 := c.tucmd&TucmdIPv4 != 0
	paylen := int(qs.olinfo >> TxdPaylenShift)
	if !c.valid || c.tucmd&TucmdL4Mask != TucmdL4TCP || c.mss == 0 || c.l4Len < 20 ||
		c.ipLen < 20 || len(p) <= hdr || paylen != len(p)-hdr {
		e.t.badDesc++
		return
	}
	e.t.tso++
	be := binary.BigEndian
	ip, tcp := c.macLen, c.macLen+c.ipLen
	id := be.Uint16(p[ip+4:])
	seq := be.Uint32(p[tcp+4:])
	flags := p[tcp+13]
	payload := p[hdr:]
	for i, off := 0, 0; off < len(payload); i, off = i+1, off+c.mss {
		chunk := payload[off:min(off+c.mss, len(payload))]
		last := off+c.mss >= len(payload)
		f := append(append(e.seg[:0], p[:hdr]...), chunk...)
		e.seg = f
		if ipv4 {
			be.PutUint16(f[ip+2:], uint16(len(f)-ip))
			be.PutUint16(f[ip+4:], id+uint16(i))
		} else {
			be.PutUint16(f[ip+4:], uint16(len(f)-ip-c.ipLen))
		}
		be.PutUint32(f[tcp+4:], seq+uint32(off))
		fl := flags
		if !last {
			fl &^= tcpFIN | tcpPSH
		}
		if i > 0 {
			fl &^= tcpCWR
		}
		f[tcp+13] = fl
		if qs.olinfo&TxdPoptsIXSM != 0 && ipv4 {
			ipChecksum(f, ip, c.ipLen)
		}
		if qs.olinfo&TxdPoptsTXSM != 0 {
			l4Checksum(f, tcp, tcp+16, uint16(len(f)-tcp), false)
		}
		n.txFrame(f, vle, c.vlan)
	}
}

// txFrame puts one frame on the wire, the VLAN tag inserted when the
// descriptor asks, padded to the minimum with TCTL.PSP.
func (n *NIC) txFrame(f []byte, vle bool, vlan uint16) {
	e := &n.tx
	ring := &e.ring
	if ring.port == nil || !ring.up {
		e.t.noLink++
		return
	}
	if len(f) < ethHdrLen {
		e.t.badDesc++
		return
	}
	if vle {
		tagged := append(e.tag[:0], f[:12]...)
		tagged = binary.BigEndian.AppendUint16(tagged, ring.vet)
		tagged = binary.BigEndian.AppendUint16(tagged, vlan)
		f = append(tagged, f[12:]...)
		e.tag = f
	}
	if ring.psp && len(f) < minFrame {
		l := len(f)
		f = grow(f, minFrame)
		clear(f[l:])
	}
	ring.port.Send(f)
	t := &e.t
	t.frames++
	t.bytes += uint64(len(f) + fcsLen)
	switch {
	case isBroadcast(f):
		t.bcast++
	case f[0]&1 != 0:
		t.mcast++
	}
	if l := len(f) + fcsLen; l <= 1522 {
		t.sizes[sizeBin(l)]++
	}
}
