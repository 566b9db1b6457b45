package m82574

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/wire"
)

const (
	txBatch     = 32        // descriptors fetched per DMA read
	maxTxPacket = 256 << 10 // the largest TSO packet the hardware takes
	minFrame    = 60        // without FCS
	fcsLen      = 4
	ethHdrLen   = 14
	vlanTagLen  = 4
)

// txContext is the offload context a context descriptor loads. It stays
// in force for the data descriptors that follow until the next one.
type txContext struct {
	ipcss, ipcso uint8
	ipcse        uint16 // last byte, inclusive; 0: to the end of the packet
	tucss, tucso uint8
	tucse        uint16
	paylen       uint32
	tucmd        uint8
	hdrlen       uint8
	mss          uint16
}

// txEngine is the state of the transmit DMA engine between descriptors.
type txEngine struct {
	ctx txContext

	// The packet being gathered, from its first descriptor to EOP.
	pkt    []byte
	inPkt  bool
	dext   bool
	tse    bool
	popts  uint8
	ic     bool // legacy: insert checksum at cso, summing from css
	cso    uint8
	css    uint8
	spoilt bool // a DMA read failed or the packet grew too large

	ring  txRing // the batch being processed
	descs [txBatch * descLen]byte
	seg   []byte // one frame being built for the wire
	tag   []byte // a frame with its VLAN tag inserted
	t     txTally
}

// txTally collects statistics outside the register lock.
type txTally struct {
	frames, bytes, bcast, mcast, tso, tsoFail uint64
	sizes                                     [6]uint32
	noLink, dmaFaults, badDesc, packets       uint64
	rsDone                                    bool
}

// txRing is the register state one batch of descriptors runs under.
type txRing struct {
	base        uint64
	count, head uint32
	tail        uint32
	ok          bool

	port       wire.Port
	up         bool
	vme, psp   bool
	vet        uint16
	flgl, flgh uint32 // DTXTCPFLGL, DTXTCPFLGH
}

func (n *NIC) txRingLocked() txRing {
	r := &n.regs
	count := r[TDLEN/4] / descLen
	t := txRing{
		base:  uint64(r[TDBAH/4])<<32 | uint64(r[TDBAL/4]),
		count: count, head: r[TDH/4], tail: r[TDT/4],
		port: n.port, up: n.linkWas.up,
		vme: r[CTRL/4]&CtrlVME != 0, psp: r[TCTL/4]&TctlPSP != 0, vet: uint16(r[VET/4]),
		flgl: r[DTXTCPFLGL/4], flgh: r[DTXTCPFLGH/4],
	}
	t.ok = r[TCTL/4]&TctlEN != 0 && count != 0 && t.head < count && t.tail < count
	return t
}

// kickTx runs the transmit engine until the ring is empty: it fetches the
// descriptors software handed over (TDH up to TDT), sends their packets
// and writes back DD where RS asks for it.
func (n *NIC) kickTx() {
	n.txMu.Lock()
	defer n.txMu.Unlock()
	e := &n.tx
	for {
		n.mu.Lock()
		ring := n.txRingLocked()
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
			n.mu.Lock()
			n.counters.TxDMAFaults++
			n.mu.Unlock()
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
	if n.regs[TDH/4] == ring.head { // software did not move the head meanwhile
		n.regs[TDH/4] = (ring.head + k) % ring.count
	}
	c := &n.counters
	c.TxPackets += t.packets
	c.TxFrames += t.frames
	c.TxTSO += t.tso
	c.TxNoLink += t.noLink
	c.TxDMAFaults += t.dmaFaults
	c.TxBadDesc += t.badDesc
	n.statLocked(GPTC, uint32(t.frames))
	n.statLocked(TPT, uint32(t.frames))
	n.stat64Locked(GOTCL, t.bytes)
	n.stat64Locked(TOTL, t.bytes)
	n.statLocked(BPTC, uint32(t.bcast))
	n.statLocked(MPTC, uint32(t.mcast))
	n.statLocked(TSCTC, uint32(t.tso))
	n.statLocked(TSCTFC, uint32(t.tsoFail))
	for i, v := range t.sizes {
		n.statLocked(PTC64+4*uint32(i), v)
	}
	var causes uint32
	if t.rsDone {
		causes |= IntTXDW | IntTXQ0
	}
	if n.regs[TDH/4] == n.regs[TDT/4] {
		causes |= IntTXQE
	}
	if causes != 0 {
		n.causeLocked(causes)
	}
}

// txDesc processes one descriptor and reports whether it asked for a
// status write-back (RS).
func (n *NIC) txDesc(d []byte) (rs bool) {
	e := &n.tx
	le := binary.LittleEndian
	cmd := d[11]
	if cmd&TxdDEXT == 0 {
		return n.txData(d, false, le.Uint64(d[0:]), int(le.Uint16(d[8:])), cmd)
	}
	switch d[10] >> 4 {
	case TxdDTYPContext:
		e.ctx = txContext{
			ipcss: d[0], ipcso: d[1], ipcse: le.Uint16(d[2:]),
			tucss: d[4], tucso: d[5], tucse: le.Uint16(d[6:]),
			paylen: le.Uint32(d[8:]) & 0xfffff, tucmd: cmd,
			hdrlen: d[13], mss: le.Uint16(d[14:]),
		}
		return cmd&TxdRS != 0
	case TxdDTYPData:
		return n.txData(d, true, le.Uint64(d[0:]), int(le.Uint32(d[8:])&0xfffff), cmd)
	}
	e.t.badDesc++
	return cmd&TxdRS != 0
}

// txData gathers one data (or legacy) descriptor's buffer into the packet
// and sends the packet at EOP.
func (n *NIC) txData(d []byte, dext bool, addr uint64, length int, cmd uint8) bool {
	e := &n.tx
	if !e.inPkt {
		e.inPkt, e.dext, e.spoilt = true, dext, false
		e.pkt = e.pkt[:0]
		if dext {
			e.tse = cmd&TxdTSE != 0
			e.popts = d[13]
		} else {
			e.ic, e.cso, e.css = cmd&TxdIC != 0, d[10], d[13]
		}
	}
	if length > 0 && !e.spoilt {
		if len(e.pkt)+length > maxTxPacket {
			e.spoilt = true
		} else {
			old := len(e.pkt)
			e.pkt = grow(e.pkt, old+length)
			if err := n.dma.Read(addr, e.pkt[old:]); err != nil {
				e.spoilt = true
				e.t.dmaFaults++
			}
		}
	}
	if cmd&TxdEOP != 0 {
		var vlan uint16
		if cmd&TxdVLE != 0 {
			vlan = binary.LittleEndian.Uint16(d[14:])
		}
		n.txPacket(cmd&TxdVLE != 0, vlan)
		e.inPkt = false
	}
	return cmd&TxdRS != 0
}

func grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b), 2048))
	copy(nb, b)
	return nb
}

// txPacket turns the gathered packet into frames on the wire: as it is,
// with checksums inserted, or cut into TCP segments.
func (n *NIC) txPacket(vle bool, vlan uint16) {
	e := &n.tx
	e.t.packets++
	if e.spoilt {
		return
	}
	p := e.pkt
	switch {
	case !e.dext:
		if e.ic {
			end := len(p)
			if !nicmodel.InsertL4Checksum(p, int(e.css), int(e.cso), end, 0, false) {
				e.t.badDesc++
			}
		}
		n.txFrame(p, vle, vlan)
	case e.tse:
		n.txSegment(vle, vlan)
	default:
		c := &e.ctx
		if e.popts&PoptsIXSM != 0 && !nicmodel.InsertIPChecksum(p, int(c.ipcss), int(c.ipcso), csumEnd(c.ipcse, len(p))) {
			e.t.badDesc++
		}
		if e.popts&PoptsTXSM != 0 && !nicmodel.InsertL4Checksum(p, int(c.tucss), int(c.tucso), csumEnd(c.tucse, len(p)), 0, c.tucmd&TucmdTCP == 0) {
			e.t.badDesc++
		}
		n.txFrame(p, vle, vlan)
	}
}

// csumEnd turns an inclusive end offset (0: end of packet) into an
// exclusive one within the packet.
func csumEnd(cse uint16, l int) int {
	if cse == 0 || int(cse) >= l {
		return l
	}
	return int(cse) + 1
}

// txSegment is TCP segmentation: the header (HDRLEN bytes) is repeated in
// front of each MSS-sized piece of the payload, with the IP length, IPv4
// identification, TCP sequence number and flags, and the checksums fixed
// up per segment. DTXTCPFLGL masks the flags of the first and middle
// segments, DTXTCPFLGH those of the last.
func (n *NIC) txSegment(vle bool, vlan uint16) {
	e := &n.tx
	c := &e.ctx
	hdr := int(c.hdrlen)
	ipEnd := hdr
	if c.ipcse != 0 {
		ipEnd = min(int(c.ipcse)+1, hdr)
	}
	flgl, flgh := e.ring.flgl, e.ring.flgh
	tso := nicmodel.TSO{
		L3: int(c.ipcss), L4: int(c.tucss), HdrLen: hdr, MSS: int(c.mss),
		IPv4: c.tucmd&TucmdIP != 0, TCP: c.tucmd&TucmdTCP != 0,
		IPCSO: int(c.ipcso), IPCSEnd: ipEnd, TUCSO: int(c.tucso),
		IPCsum: e.popts&PoptsIXSM != 0, L4Csum: e.popts&PoptsTXSM != 0,
		Flags: nicmodel.FlagMasks{
			First:  uint16(flgl & 0x0fff),
			Middle: uint16(flgl >> 16 & 0x0fff),
			Last:   uint16(flgh & 0x0fff),
		},
	}
	var err error
	e.seg, err = tso.Segment(e.pkt, e.seg, func(f []byte) { n.txFrame(f, vle, vlan) })
	if err != nil {
		e.t.tsoFail++
		e.t.badDesc++
		return
	}
	e.t.tso++
}

// txFrame puts one frame on the wire: VLAN tag inserted when asked and
// enabled, padded to the minimum length when TCTL.PSP is set.
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
	if vle && ring.vme {
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
	case nicmodel.IsBroadcast(f):
		t.bcast++
	case f[0]&1 != 0:
		t.mcast++
	}
	if l := len(f) + fcsLen; l <= 1522 {
		t.sizes[nicmodel.SizeBin(l)]++
	}
}
