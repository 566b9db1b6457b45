package m82574

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
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

// txEngine is the transmit DMA engine: the ring mechanics the family
// shares, and what this part's descriptors leave between them.
type txEngine struct {
	nicmodel.TxQueue
	ctx txContext

	// What the packet's first descriptor said.
	dext   bool
	tse    bool
	popts  uint8
	ic     bool // legacy: insert checksum at cso, summing from css
	cso    uint8
	css    uint8
	vme    bool   // CTRL.VME when the batch began: VLE inserts a tag
	tcpflg uint64 // DTXTCPFLGH:DTXTCPFLGL when the batch began
}

// txRingLocked reads the ring, the line and whether the transmitter is
// enabled from the registers.
func (n *NIC) txRingLocked() (nicmodel.TxRing, nicmodel.TxLine, bool) {
	r := &n.regs
	ring := nicmodel.TxRing{
		Base:  uint64(r[TDBAH/4])<<32 | uint64(r[TDBAL/4]),
		Count: r[TDLEN/4] / descLen, Head: r[TDH/4], Tail: r[TDT/4],
	}
	line := nicmodel.TxLine{
		Port: n.port, Up: n.linkWas.up,
		PSP: r[nicmodel.TCTL/4]&nicmodel.TctlPSP != 0, VET: uint16(r[nicmodel.VET/4]),
	}
	return ring, line, r[nicmodel.TCTL/4]&nicmodel.TctlEN != 0
}

// kickTx runs the transmit engine until the ring is empty, or for at most
// limit descriptors when limit is above zero: it fetches the descriptors
// software handed over (TDH toward TDT), sends their packets and writes
// back DD where RS asks for it.
func (n *NIC) kickTx(limit uint32) {
	n.txMu.Lock()
	defer n.txMu.Unlock()
	load := func() (nicmodel.TxRing, nicmodel.TxLine, bool) {
		r := &n.regs
		n.tx.vme = r[nicmodel.CTRL/4]&nicmodel.CtrlVME != 0
		n.tx.tcpflg = uint64(r[DTXTCPFLGH/4])<<32 | uint64(r[DTXTCPFLGL/4])
		return n.txRingLocked()
	}
	if err := n.tx.Run(n.dma, &n.mu, limit, load, n.txDesc, n.txDoneLocked); err != nil {
		n.mu.Lock()
		n.counters.TxDMAFaults++
		n.mu.Unlock()
	}
}

// TxPending is how many descriptors software handed over (up to TDT)
// that the engine has not processed yet (from TDH), for tests: reading
// TDH through the BAR would, with Options.DeferTx, process some.
func (n *NIC) TxPending() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	ring, _, _ := n.txRingLocked()
	if !ring.Valid() {
		return 0
	}
	return int((ring.Tail + ring.Count - ring.Head) % ring.Count)
}

func (n *NIC) txDoneLocked(k uint32) {
	ring, t := &n.tx.Ring, &n.tx.Tally
	if n.regs[TDH/4] == ring.Head { // software did not move the head meanwhile
		n.regs[TDH/4] = ring.Next(k)
	}
	n.counters.Add(t)
	t.AddStats(n.regs[:])
	var causes uint32
	if t.RS {
		causes |= nicmodel.IntTXDW | IntTXQ0
	}
	if n.regs[TDH/4] == n.regs[TDT/4] {
		causes |= nicmodel.IntTXQE
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
		n.txData(d, false, le.Uint64(d[0:]), int(le.Uint16(d[8:])), cmd)
		return cmd&TxdRS != 0
	}
	switch d[10] >> 4 {
	case TxdDTYPContext:
		e.ctx = txContext{
			ipcss: d[0], ipcso: d[1], ipcse: le.Uint16(d[2:]),
			tucss: d[4], tucso: d[5], tucse: le.Uint16(d[6:]),
			paylen: le.Uint32(d[8:]) & 0xfffff, tucmd: cmd,
			hdrlen: d[13], mss: le.Uint16(d[14:]),
		}
	case TxdDTYPData:
		n.txData(d, true, le.Uint64(d[0:]), int(le.Uint32(d[8:])&0xfffff), cmd)
	default:
		e.Tally.BadDesc++
	}
	return cmd&TxdRS != 0
}

// txData gathers one data (or legacy) descriptor's buffer into the packet
// and sends the packet at EOP.
func (n *NIC) txData(d []byte, dext bool, addr uint64, length int, cmd uint8) {
	e := &n.tx
	if e.Gather(n.dma, addr, length) {
		e.dext = dext
		if dext {
			e.tse = cmd&TxdTSE != 0
			e.popts = d[13]
		} else {
			e.ic, e.cso, e.css = cmd&TxdIC != 0, d[10], d[13]
		}
	}
	if cmd&TxdEOP != 0 {
		var vlan uint16
		if cmd&TxdVLE != 0 {
			vlan = binary.LittleEndian.Uint16(d[14:])
		}
		n.txPacket(cmd&TxdVLE != 0 && e.vme, vlan)
	}
}

// txPacket turns the gathered packet into frames on the wire: as it is,
// with checksums inserted, or cut into TCP segments. With tag the VLAN
// tag is inserted in each.
func (n *NIC) txPacket(tag bool, vlan uint16) {
	e := &n.tx
	p, ok := e.End()
	if !ok {
		return
	}
	switch {
	case !e.dext:
		if e.ic && !nicmodel.InsertL4Checksum(p, int(e.css), int(e.cso), len(p), 0, false) {
			e.Tally.BadDesc++
		}
		e.Send(p, tag, vlan)
	case e.tse:
		n.txSegment(p, tag, vlan)
	default:
		c := &e.ctx
		if e.popts&PoptsIXSM != 0 && !nicmodel.InsertIPChecksum(p, int(c.ipcss), int(c.ipcso), csumEnd(c.ipcse, len(p))) {
			e.Tally.BadDesc++
		}
		if e.popts&PoptsTXSM != 0 && !nicmodel.InsertL4Checksum(p, int(c.tucss), int(c.tucso), csumEnd(c.tucse, len(p)), 0, c.tucmd&TucmdTCP == 0) {
			e.Tally.BadDesc++
		}
		e.Send(p, tag, vlan)
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

// txSegment is TCP (or UDP) segmentation from the context: HDRLEN bytes
// of headers repeated in front of each MSS-sized piece of the payload.
// DTXTCPFLGL masks the TCP flags of the first and middle segments,
// DTXTCPFLGH those of the last.
func (n *NIC) txSegment(p []byte, tag bool, vlan uint16) {
	e := &n.tx
	c := &e.ctx
	hdr := int(c.hdrlen)
	ipEnd := hdr
	if c.ipcse != 0 {
		ipEnd = min(int(c.ipcse)+1, hdr)
	}
	tso := nicmodel.TSO{
		L3: int(c.ipcss), L4: int(c.tucss), HdrLen: hdr, MSS: int(c.mss),
		IPv4: c.tucmd&TucmdIP != 0, TCP: c.tucmd&TucmdTCP != 0,
		IPCSO: int(c.ipcso), IPCSEnd: ipEnd, TUCSO: int(c.tucso),
		IPCsum: e.popts&PoptsIXSM != 0, L4Csum: e.popts&PoptsTXSM != 0,
		Flags: nicmodel.FlagMasks{
			First:  uint16(e.tcpflg & 0x0fff),
			Middle: uint16(e.tcpflg >> 16 & 0x0fff),
			Last:   uint16(e.tcpflg >> 32 & 0x0fff),
		},
	}
	if err := e.Segment(&tso, p, tag, vlan); err != nil {
		e.Tally.TSOFail++
		e.Tally.BadDesc++
		return
	}
	e.Tally.TSO++
}
