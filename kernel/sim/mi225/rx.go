package mi225

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

const (
	minFrame    = nicmodel.MinFrame // without FCS
	fcsLen      = nicmodel.FCSLen
	maxStdFrame = 1518 // with FCS, untagged, without RCTL.LPE
	maxRxDescs  = 64   // descriptors one frame may span
	rxPrefetch  = 16   // descriptors fetched per DMA read
)

// rxEngine is the receive DMA engine's state; rxMu guards it.
type rxEngine struct {
	conf   rxConf
	stored nicmodel.RxFrame // the frame as stored: tag stripped, FCS appended unless SECRC
	descs  [maxRxDescs * descLen]byte
	wb     [maxRxDescs * descLen]byte
	pf     [Queues]nicmodel.RxPrefetch
}

// rxQueue is one receive ring's state for one frame.
type rxQueue struct {
	q                 int
	base              uint64
	count, head, tail uint32
	srrctl            uint32
	gen               uint64
}

// rxAdmit is what the MAC decides about a frame as it arrives.
type rxAdmit struct {
	ok   bool
	rctl uint32
	vme  bool
	qsel int // queue chosen by the matching RAH.QSEL, or -1
	// quiet: a deferred frame written as the loop its interrupt woke
	// masks the queue to poll it; that interrupt stood for the frame,
	// and the write-back raises nothing again, which would only name the
	// queue once more after it found the frame.
	quiet bool
}

// receive takes one frame from the wire on the sender's goroutine. The
// checks made on arrival (filters, size) and the choice of queue run at
// once; then the frame is written to its ring at once or, with
// Options.DeferRx, waits in its queue's line of the packet buffer.
func (n *NIC) receive(frame []byte) {
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	n.mu.Lock()
	a := n.rxAdmitLocked(frame)
	if !a.ok {
		n.mu.Unlock()
		return
	}
	if n.opt.DeferRx {
		n.rxDeferLocked(frame, a)
		n.mu.Unlock()
		return
	}
	n.deliverLocked(frame, a, nil)
}

// rxDeferLocked puts an admitted frame in its queue's line of the packet
// buffer, or misses it (MPC) when the buffer is full. The frame's DMA is
// yet to happen, on the driver's next look at the queue; the interrupt
// it will cause is raised now, so that a driver asleep wakes and looks
// at that queue. In MSI and INTx mode that is the write-back causes,
// ICR.RXT0 and the EICR bit the queue's IVAR entry names (datasheet
// 7.3), so the interrupt names the queue; the write-back raises them
// again. In MSI-X mode the vector does not fire before the DMA: if it is
// armed, its message is sent (or the line raised while MSI-X is off in
// config space) with no cause set. rxMu and mu are held.
func (n *NIC) rxDeferLocked(frame []byte, a rxAdmit) {
	var p rxParse
	a.qsel, _ = n.steerLocked(frame, a, &p)
	l := len(frame)
	if n.pbUsed+l > n.pbLimit || !n.pbq[a.qsel].Push(frame, a) {
		nicmodel.AddStat(n.regs[:], nicmodel.MPC, 1)
		n.counters.RxNoDescriptor++
		n.otherCauseLocked(nicmodel.IntRXO)
		return
	}
	n.pbUsed += l
	switch {
	case !n.msixModeLocked():
		n.queueEventLocked(a.qsel, false)
	case n.queueArmedLocked(a.qsel):
		n.kickLocked(a.qsel)
	}
}

// steerLocked chooses a frame's receive queue: the one its address filter
// selects (RAH.QSEL), else the EtherType and 2-tuple filters', else RSS
// through the redirection table (queue 0 for a frame RSS does not hash),
// else queue 0. It loads the receive configuration into the engine; when
// RSS needed the frame parsed, p holds it and parsed is true. It is
// called with rxMu and mu held, and drops mu while parsing.
func (n *NIC) steerLocked(frame []byte, a rxAdmit, p *rxParse) (q int, parsed bool) {
	c := &n.rx.conf
	c.rxcsum, c.mrqc, c.vet = n.regs[nicmodel.RXCSUM/4], n.regs[nicmodel.MRQC/4], uint16(n.regs[nicmodel.VET/4])
	rss := c.mrqc&MrqcEnableMask == MrqcEnableRSS
	if rss {
		for i := range 10 {
			binary.LittleEndian.PutUint32(c.key[4*i:], n.regs[nicmodel.RSSRK/4+uint32(i)])
		}
	}
	q = a.qsel
	if q < 0 {
		q = n.filterQueueLocked(frame)
	}
	if q >= 0 || !rss {
		return max(q, 0), false
	}
	n.mu.Unlock()
	*p = parseRx(frame, c)
	n.mu.Lock()
	if p.rssType == RSSNone {
		return 0, true
	}
	i := p.hash & 0x7f
	return int(n.regs[nicmodel.RETA/4+i/4]>>(8*(i%4))) & (Queues - 1), true
}

// deliverLocked writes an admitted frame to its queue's ring: the queue
// choice (steerLocked), parsing and checksums, descriptor fetch, data DMA
// and write-back. It is called with rxMu and mu held and releases mu. It
// reports false when the frame found too few free descriptors and is
// held: starved is then its packet buffer's flag, set once the frame was
// counted in RNBC so it is not counted again while it waits at the head.
// Otherwise (starved nil: the frame is arriving) the frame is gone,
// stored or dropped.
func (n *NIC) deliverLocked(frame []byte, a rxAdmit, starved *bool) bool {
	var p rxParse
	q, parsed := n.steerLocked(frame, a, &p)
	ring, ok := n.rxQueueLocked(q)
	n.mu.Unlock()
	if !parsed {
		p = parseRx(frame, &n.rx.conf)
	}
	if !ok {
		n.count(func(c *Counters) { c.RxOff++ })
		return true
	}
	if dt := ring.srrctl & SrrctlDescTypeMask; dt != SrrctlDescLegacy && dt != SrrctlDescAdvOne && dt != SrrctlDescHdrSplit && dt != SrrctlDescHdrAlways {
		n.count(func(c *Counters) { c.RxUnsupported++ })
		return true
	}
	return n.rxStore(frame, a, &p, ring, starved)
}

func (n *NIC) count(f func(*Counters)) {
	n.mu.Lock()
	f(&n.counters)
	n.mu.Unlock()
}

// rxAdmitLocked runs the checks made as the frame arrives: receiver and
// link on, length, destination address, VLAN filter. Rejected frames are
// counted here.
func (n *NIC) rxAdmitLocked(f []byte) rxAdmit {
	r := n.regs
	a := rxAdmit{rctl: r[nicmodel.RCTL/4], vme: r[nicmodel.CTRL/4]&nicmodel.CtrlVME != 0, qsel: -1}
	if a.rctl&nicmodel.RctlEN == 0 || !n.link.up {
		n.counters.RxOff++
		return a
	}
	l := len(f) + fcsLen
	nicmodel.AddStat(n.regs[:], nicmodel.TPR, 1)
	nicmodel.AddStat64(n.regs[:], nicmodel.TORL, uint64(l))
	tagged := nicmodel.Tagged(f, uint16(r[nicmodel.VET/4]))
	limit := maxStdFrame
	if a.rctl&nicmodel.RctlLPE != 0 {
		limit = int(r[RLPML/4] & RlpmlMask)
	} else if tagged {
		limit += vlanTagLen
	}
	switch {
	case len(f) < ethHdrLen:
		n.counters.RxBadSize++
		return a
	case len(f) < minFrame && a.rctl&nicmodel.RctlSBP == 0:
		nicmodel.AddStat(n.regs[:], nicmodel.RUC, 1)
		n.counters.RxBadSize++
		return a
	case l > limit:
		nicmodel.AddStat(n.regs[:], nicmodel.ROC, 1)
		n.counters.RxBadSize++
		return a
	}
	if !n.addrMatchLocked(f, a.rctl, &a) {
		n.counters.RxFiltered++
		return a
	}
	if tagged && a.rctl&nicmodel.RctlVFE != 0 && !nicmodel.TableBit(r[nicmodel.VFTA/4:], nicmodel.VLANID(f)) {
		n.counters.RxFiltered++
		return a
	}
	a.ok = true
	return a
}

// addrMatchLocked is the destination address filter: exact matches in
// RAL/RAH (which may also pick the queue), the multicast table,
// promiscuous and broadcast modes.
func (n *NIC) addrMatchLocked(f []byte, rctl uint32, a *rxAdmit) bool {
	r := n.regs
	lo := binary.LittleEndian.Uint32(f[0:4])
	hi := uint32(binary.LittleEndian.Uint16(f[4:6]))
	for i := uint32(0); i < 16; i++ {
		rah := r[nicmodel.RAH0/4+2*i]
		if rah&nicmodel.RahAV == 0 || rah>>16&3 != 0 { // ASEL 00: destination address
			continue
		}
		if r[nicmodel.RAL0/4+2*i] == lo && rah&0xffff == hi {
			if rah&(1<<28) != 0 { // QSEL enable
				a.qsel = int(rah >> 18 & 3)
			}
			return true
		}
	}
	switch {
	case f[0]&1 == 0:
		return rctl&nicmodel.RctlUPE != 0
	case lo == 0xffffffff && hi == 0xffff:
		return rctl&nicmodel.RctlBAM != 0 || rctl&nicmodel.RctlMPE != 0
	case rctl&nicmodel.RctlMPE != 0:
		return true
	}
	return nicmodel.TableBit(r[nicmodel.MTA/4:], nicmodel.MTAHash(f, rctl>>nicmodel.RctlMOSh))
}

// rxQueueLocked snapshots queue q's ring, or reports it off.
func (n *NIC) rxQueueLocked(q int) (rxQueue, bool) {
	r := n.regs
	rq := rxQueue{
		q:      q,
		base:   uint64(r[RxQ(RDBAH, q)/4])<<32 | uint64(r[RxQ(RDBAL, q)/4]),
		count:  r[RxQ(RDLEN, q)/4] / descLen,
		head:   r[RxQ(RDH, q)/4],
		tail:   r[RxQ(RDT, q)/4],
		srrctl: r[RxQ(SRRCTL, q)/4],
		gen:    n.ringGen[q],
	}
	ok := r[RxQ(RXDCTL, q)/4]&DctlEnable != 0 && rq.count != 0 && rq.head < rq.count && rq.tail < rq.count
	return rq, ok
}

// bufSizes returns the packet and header buffer sizes of a queue.
func bufSizes(srrctl, rctl uint32) (pkt, hdr int) {
	pkt = int(srrctl&SrrctlBSizePktMask) << 10
	if pkt == 0 {
		pkt = [4]int{2048, 1024, 512, 256}[rctl>>nicmodel.RctlBSIZSh&3]
	}
	hdr = int(srrctl&SrrctlBSizeHdrMask>>SrrctlBSizeHdrShift) * 64
	return pkt, hdr
}

// rxStore writes a frame to queue ring: the frame as stored (tag
// stripped with CTRL.VME, FCS kept without RCTL.SECRC), over as many
// descriptors as the packet buffer size asks, the header in the first
// header buffer in header-split mode; then the write-backs.
func (n *NIC) rxStore(frame []byte, a rxAdmit, p *rxParse, ring rxQueue, starved *bool) bool {
	e := &n.rx
	vp := a.vme && nicmodel.Tagged(frame, e.conf.vet)
	buf, vlan := e.stored.Build(frame, vp, a.rctl&nicmodel.RctlSECRC == 0)
	if vp && p.hdrLen >= 16 {
		p.hdrLen -= vlanTagLen
	}

	pktSize, hdrSize := bufSizes(ring.srrctl, a.rctl)
	sp := splitFrame(ring.srrctl&SrrctlDescTypeMask, len(buf), p.hdrLen, hdrSize)
	data := buf[sp.toHdr:]
	k := max(1, (len(data)+pktSize-1)/pktSize)
	free := (ring.tail + ring.count - ring.head) % ring.count
	if k > maxRxDescs || uint32(k) > free {
		n.mu.Lock()
		defer n.mu.Unlock()
		if starved == nil || !*starved {
			nicmodel.AddStat(n.regs[:], nicmodel.RNBC, 1) // once per frame, however long it waits
		}
		switch {
		case ring.srrctl&SrrctlDropEn != 0 || k > maxRxDescs:
			n.regs[RxQ(RQDPC, ring.q)/4]++
		case starved != nil:
			*starved = true
			return false
		default:
			nicmodel.AddStat(n.regs[:], nicmodel.MPC, 1)
			n.otherCauseLocked(nicmodel.IntRXO)
		}
		n.counters.RxNoDescriptor++
		return true
	}
	descs := e.descs[:k*descLen]
	if !n.rxFetch(ring, descs) {
		return true
	}
	le := binary.LittleEndian
	var dw0 uint32
	dw0 = p.rssType | p.ptype<<RxdPtypeShift
	dw1 := p.hash
	if e.conf.rxcsum&nicmodel.RxcsumPCSD == 0 {
		dw1 = uint32(p.ipid) | uint32(p.fragSum)<<16
	}
	status := p.status | p.errors
	if vp {
		status |= RxdStaVP
	}
	if sp.hbo {
		status |= RxdErrHBO
	}
	legacy := ring.srrctl&SrrctlDescTypeMask == SrrctlDescLegacy
	var pktSum uint16
	if legacy {
		pktSum = nicmodel.PacketChecksum(buf, int(e.conf.rxcsum&nicmodel.RxcsumPCSSMask), a.rctl&nicmodel.RctlSECRC == 0)
	}
	faults := 0
	for i := range k {
		d := descs[i*descLen : (i+1)*descLen]
		chunk := data[min(i*pktSize, len(data)):min((i+1)*pktSize, len(data))]
		if len(chunk) > 0 && n.dma.Write(le.Uint64(d[0:]), chunk) != nil {
			faults++
		}
		w := e.wb[i*descLen : (i+1)*descLen]
		h := dw0
		if i == 0 {
			if sp.toHdr > 0 && n.dma.Write(le.Uint64(d[8:])&^1, buf[:sp.toHdr]) != nil {
				faults++
			}
			h |= uint32(min(sp.hdrLen, 0x3ff)) << RxdHdrLenShift
			if sp.sph {
				h |= RxdSPH
			}
		}
		st := status | RxdStaDD
		if i == k-1 {
			st |= RxdStaEOP
		}
		if legacy {
			status, errs := legacyStatus(st, e.conf.rxcsum)
			nicmodel.PutLegacyRx(w, le.Uint64(d[0:]), uint16(len(chunk)), pktSum, status, errs, vlan)
			continue
		}
		le.PutUint32(w[0:], h)
		le.PutUint32(w[4:], dw1)
		le.PutUint32(w[8:], st)
		le.PutUint32(w[12:], uint32(len(chunk))|uint32(vlan)<<16)
	}
	// The write-backs go out in ring order after the data.
	first := uint64(ring.head)
	for i := 0; i < k; {
		run := min(k-i, int(ring.count)-int((first+uint64(i))%uint64(ring.count)))
		at := ring.base + (first+uint64(i))%uint64(ring.count)*descLen
		if n.dma.Write(at, e.wb[i*descLen:(i+run)*descLen]) != nil {
			faults++
		}
		i += run
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	c := &n.counters
	c.RxDMAFaults += uint64(faults)
	if n.ringGen[ring.q] != ring.gen {
		return true // the ring was set up again meanwhile
	}
	n.regs[RxQ(RDH, ring.q)/4] = (ring.head + uint32(k)) % ring.count
	c.RxFrames++
	c.RxQueueFrames[ring.q]++
	c.RxDescriptors += uint64(k)
	nicmodel.CountRx(n.regs, frame)
	if !a.quiet {
		n.queueEventLocked(ring.q, false)
	}
	return true
}

// legacyStatus turns the advanced status and errors into the legacy
// descriptor's status and errors bytes: DD, EOP, VP, UDPCS, TCPCS and IPCS
// keep their bit positions; IXSM says no checksum was verified; the
// errors byte has TCPE (bit 5) and IPE (bit 6).
func legacyStatus(st, rxcsum uint32) (status, errors byte) {
	status = byte(st & (RxdStaDD | RxdStaEOP | RxdStaVP | RxdStaUDPCS | RxdStaL4I | RxdStaIPCS))
	if rxcsum&(nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL) == 0 {
		status |= RxdLegacyIXSM
	}
	if st&RxdErrL4E != 0 {
		errors |= RxdLegacyTCPE
	}
	if st&RxdErrIPE != 0 {
		errors |= RxdLegacyIPE
	}
	return status, errors
}

// rxSplit says how a frame is laid out over the first descriptor's
// header buffer and the packet buffers.
type rxSplit struct {
	toHdr    int  // bytes from the start of the frame into the header buffer
	hdrLen   int  // the HDR_LEN field
	sph, hbo bool // header found and split; header larger than the buffer
}

// splitFrame applies the header split rules of SRRCTL.DESCTYPE to a
// stored frame of length l whose parsed header is hdr bytes long (0: not
// recognised), with header buffers of hdrSize bytes:
//
//	header split: a recognised header that fits goes to the header
//	buffer (SPH); one that does not fit is reported (SPH, HBO) but the
//	frame goes to the packet buffers whole, as does an unrecognised one.
//
//	always use header buffer: a frame that fits the header buffer goes
//	there whole (HDR_LEN its length, no SPH); a recognised header that
//	fits is split off (SPH); otherwise the first hdrSize bytes fill the
//	header buffer and the rest follows in the packet buffers (SPH and
//	HBO if a header was recognised, HDR_LEN hdrSize if not).
func splitFrame(desctype uint32, l, hdr, hdrSize int) rxSplit {
	switch desctype {
	case SrrctlDescHdrSplit:
		switch {
		case hdr == 0:
			return rxSplit{}
		case hdr <= hdrSize:
			return rxSplit{toHdr: hdr, hdrLen: hdr, sph: true}
		}
		return rxSplit{hdrLen: hdr, sph: true, hbo: true}
	case SrrctlDescHdrAlways:
		switch {
		case l <= hdrSize:
			return rxSplit{toHdr: l, hdrLen: l}
		case hdr == 0:
			return rxSplit{toHdr: hdrSize, hdrLen: hdrSize}
		case hdr <= hdrSize:
			return rxSplit{toHdr: hdr, hdrLen: hdr, sph: true}
		}
		return rxSplit{toHdr: hdrSize, hdrLen: hdr, sph: true, hbo: true}
	}
	return rxSplit{}
}

// rxFetch reads the k descriptors from the head, through the queue's
// prefetch cache. A refused read drops the frame.
func (n *NIC) rxFetch(ring rxQueue, descs []byte) bool {
	r := nicmodel.RxRing{Base: ring.base, Count: ring.count, Head: ring.head, Tail: ring.tail, Gen: ring.gen}
	for i := range uint32(len(descs) / descLen) {
		d, err := n.rx.pf[ring.q].Desc(n.dma, r, (ring.head+i)%ring.count, rxPrefetch)
		if err != nil {
			n.count(func(c *Counters) { c.RxDMAFaults++ })
			return false
		}
		copy(descs[i*descLen:], d)
	}
	return true
}
