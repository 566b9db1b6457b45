package m82576

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

const (
	maxFrame    = 1518 // with FCS, untagged, without RCTL.LPE
	minFrameFCS = 64
	rlpmlMask   = 0x3fff
	protoSCTP   = 132

	// rxPrefetch is how many descriptors one fetch reads ahead. The
	// 82576 fetches receive descriptors in bursts into an on-chip cache
	// per queue, never past RDT, and does not read them again.
	rxPrefetch = nicmodel.RxPrefetchMax
)

// rxEngine is the receive DMA engine's state; rxMu guards it.
type rxEngine struct {
	stored nicmodel.RxFrame // the frame as stored: tag stripped, FCS kept unless SECRC
	descs  []byte           // the frame's descriptors, then their write-backs
	pf     [numQueues]nicmodel.RxPrefetch
}

// rxSetup is what one frame needs from the registers: the queue chosen
// and the offload set-up when it arrived, then that queue's ring when it
// is written.
type rxSetup struct {
	q                uint32
	rctl, rxcsum     uint32
	vme              bool
	vet              uint16
	pkt              nicmodel.Packet
	etqf             int
	l2               bool
	rssType, rssHash uint32
	srrctl           uint32
	ring             nicmodel.RxRing
	// quiet: a deferred frame written as the loop its interrupt woke
	// masks the queue to poll it; that interrupt was its causes, raised
	// as it was held, and the write-back raises none again, which would
	// only name the queue once more after it found the frame.
	quiet bool
}

// rxOutcome is what became of one attempt to write a frame.
type rxOutcome int

const (
	rxDone   rxOutcome = iota // written, or dropped for good
	rxNoRoom                  // too few free descriptors on its queue
)

// receive takes one frame from the wire: it is filtered and steered to a
// queue at once; then it is written to that queue's ring, or waits in the
// packet buffer (with Options.DeferRx, behind other waiting frames, or
// when its queue is out of descriptors and SRRCTL.Drop_En is clear).
func (n *NIC) receive(frame []byte) {
	n.mu.Lock()
	s, ok := n.rxRouteLocked(frame)
	n.mu.Unlock()
	if !ok {
		return
	}
	if n.opt.DeferRx {
		n.rxHold(frame, &s)
		// The frame stands for DMA the model does on the driver's next
		// look at the queue; its write-back causes are raised now, as
		// the part raises them for a frame it writes: ICR.RXDW and the
		// EICR bit the queue's IVAR entry names (datasheet 7.3.1), so
		// the interrupt names the queue to wake. The write-back at that
		// look raises them again.
		n.mu.Lock()
		n.queueCauseLocked(s.q, false)
		n.mu.Unlock()
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	if n.pb.Len() > 0 {
		n.rxHold(frame, &s) // frames leave the buffer in order
		return
	}
	if n.rxTry(frame, &s) == rxNoRoom {
		n.rxNoRoom(n.pb, frame, &s, true)
	}
}

// rxNoRoom handles a frame whose queue had too few descriptors: it is
// counted in RNBC once, then dropped (SRRCTL.Drop_En, counted in RQDPC) or
// held in the packet buffer until software returns descriptors.
func (n *NIC) rxNoRoom(pb *packetBuffer, frame []byte, s *rxSetup, arriving bool) (held bool) {
	n.mu.Lock()
	if arriving || !pb.Starved {
		n.counters.RxNoDescriptor++
		nicmodel.AddStat(n.regs[:], nicmodel.RNBC, 1)
	}
	drop := s.srrctl&SrrctlDropEn != 0
	if drop {
		nicmodel.AddStat(n.regs[:], RQDPC+s.q*queueSize, 1)
	}
	n.mu.Unlock()
	if drop || !arriving {
		return !drop
	}
	n.rxHold(frame, s) // the buffer was empty: it is the head, already counted
	pb.Starved = true
	return true
}

// rxHold puts a frame in the packet buffer (with DeferRx, in its queue's
// line); a full buffer misses it (MPC).
func (n *NIC) rxHold(frame []byte, s *rxSetup) {
	held := *s
	held.pkt = nicmodel.Packet{} // it points into the sender's frame; parsed again at drain
	if !n.opt.DeferRx {
		if n.pb.Push(frame, held) {
			return
		}
	} else if l := int64(len(frame)); n.deferred.Add(l) <= n.pbLimit && n.pbq[s.q].Push(frame, held) {
		return
	} else {
		n.deferred.Add(-l)
	}
	n.mu.Lock()
	n.counters.RxMissed++
	nicmodel.AddStat(n.regs[:], nicmodel.MPC, 1)
	n.otherCauseLocked(IntRXMiss)
	n.mu.Unlock()
}

// rxRouteLocked admits a frame (receiver on, size, address and VLAN
// filters), counts it, and chooses its queue: an EtherType filter with
// queue enable first, then a 5-tuple filter, then RSS through the
// redirection table (or the pool of the matched address in VMDq mode),
// else queue 0.
func (n *NIC) rxRouteLocked(f []byte) (s rxSetup, ok bool) {
	r := n.regs
	rctl := r[nicmodel.RCTL/4]
	if rctl&nicmodel.RctlEN == 0 || !n.linkUp || len(f) < nicmodel.EthHdrLen {
		n.counters.RxOff++
		return s, false
	}
	l := len(f) + nicmodel.FCSLen
	nicmodel.AddStat(n.regs[:], nicmodel.TPR, 1)
	nicmodel.AddStat64(n.regs[:], nicmodel.TORL, uint64(l))
	vet := uint16(r[nicmodel.VET/4])
	s.pkt = nicmodel.Parse(f, vet)
	limit := maxFrame
	if rctl&nicmodel.RctlLPE != 0 {
		limit = int(r[RLPML/4] & rlpmlMask)
	}
	if s.pkt.Tagged {
		limit += nicmodel.VLANTagLen
	}
	switch {
	case l < minFrameFCS:
		nicmodel.AddStat(n.regs[:], nicmodel.RUC, 1)
		n.counters.RxBadSize++
		return s, false
	case l > limit:
		nicmodel.AddStat(n.regs[:], nicmodel.ROC, 1)
		n.counters.RxBadSize++
		return s, false
	}
	accept, pools := n.acceptLocked(f, rctl)
	if !accept || s.pkt.Tagged && rctl&nicmodel.RctlVFE != 0 && !n.vlanAcceptLocked(f) {
		n.counters.RxFiltered++
		return s, false
	}

	s.rctl, s.rxcsum, s.vet = rctl, r[nicmodel.RXCSUM/4], vet
	s.vme = r[nicmodel.CTRL/4]&nicmodel.CtrlVME != 0
	mrqc := r[nicmodel.MRQC/4]
	mode := mrqc & MrqcModeMask
	if mode == MrqcRSS {
		s.rssType, s.rssHash = rssHash(n.rssTableLocked(), mrqc, &s.pkt)
	}
	var steered bool
	if idx, q, steer, match := n.etqfLocked(&s.pkt); match {
		s.etqf, s.l2 = idx, true
		s.q, steered = q, steer
	}
	if !steered {
		s.q, steered = n.fiveTupleLocked(&s.pkt, l)
	}
	if !steered {
		switch {
		case mode == MrqcRSS && s.rssType != RSSNone:
			s.q = n.retaLocked(s.rssHash)
		case mode == MrqcVMDq && pools != 0:
			for s.q = 0; pools&(1<<s.q) == 0; s.q++ {
			}
		default:
			s.q = 0
		}
	}
	return s, true
}

// rxRingLocked takes the ring of the frame's queue as it is now. It
// reports false when the queue is not enabled.
func (n *NIC) rxRingLocked(s *rxSetup) bool {
	r := n.regs
	qo := s.q * queueSize
	if r[(RXDCTL+qo)/4]&RxdctlEnable == 0 {
		return false
	}
	s.srrctl = r[(SRRCTL+qo)/4]
	s.ring = nicmodel.RxRing{
		Base:  uint64(r[(RDBAH+qo)/4])<<32 | uint64(r[(RDBAL+qo)/4]),
		Count: r[(RDLEN+qo)/4] / descLen,
		Head:  r[(RDH+qo)/4],
		Tail:  r[(RDT+qo)/4],
		Gen:   n.rxGen[s.q],
	}
	return true
}

// rxBufSize is the receive buffer size of a queue: SRRCTL.BSIZEPACKET in
// KiB for advanced descriptors, else (or when that is 0) RCTL.BSIZE.
func rxBufSize(s *rxSetup, adv bool) int {
	if k := s.srrctl & SrrctlBSizePktMask; adv && k != 0 {
		return int(k) << 10
	}
	return 2048 >> (s.rctl >> nicmodel.RctlBSIZSh & 3)
}

// rxTry writes an admitted frame into its queue's ring: buffers first,
// then the descriptors written back, then the head moves and the queue's
// cause is signalled. A frame that does not fit the free descriptors is
// left whole for the caller (rxNoRoom). rxMu is held.
func (n *NIC) rxTry(frame []byte, s *rxSetup) rxOutcome {
	e := &n.rx
	n.mu.Lock()
	on := n.rxRingLocked(s)
	if !on {
		n.counters.RxQueueOff++
		nicmodel.AddStat(n.regs[:], RQDPC+s.q*queueSize, 1)
	}
	n.mu.Unlock()
	if !on {
		return rxDone
	}
	dtype := s.srrctl >> SrrctlDescTypeSh & SrrctlDescTypeMask
	if dtype != DescTypeLegacy && dtype != DescTypeAdvOneBuf {
		n.mu.Lock()
		n.counters.RxBadSetup++
		n.mu.Unlock()
		return rxDone
	}
	adv := dtype == DescTypeAdvOneBuf

	strip := s.pkt.Tagged && s.vme
	data, tci := e.stored.Build(frame, strip, s.rctl&nicmodel.RctlSECRC == 0)

	ring := s.ring
	bsize := rxBufSize(s, adv)
	need := uint32((len(data) + bsize - 1) / bsize)
	if need > ring.Free() {
		return rxNoRoom
	}
	e.descs = nicmodel.Grow(e.descs, int(need)*descLen)
	descs := e.descs
	if err := n.rxFetch(s.q, ring, descs); err != nil {
		// Without its descriptors the frame has nowhere to go.
		n.mu.Lock()
		n.counters.RxDMAFaults++
		n.mu.Unlock()
		return rxDone
	}
	var faults uint64
	o := rxOffload(s, data)
	if strip {
		o.status |= RxdVP
	}
	le := binary.LittleEndian
	for j := range need {
		d := descs[j*descLen : (j+1)*descLen]
		bufAddr := le.Uint64(d[0:])
		chunk := data[int(j)*bsize : min(int(j+1)*bsize, len(data))]
		if err := n.dma.Write(bufAddr, chunk); err != nil {
			// The hardware still completes the descriptor: software
			// learns of the fault from the IOMMU, not from the ring.
			faults++
		}
		last := j == need-1
		if adv {
			o.writeBackAdv(d, uint16(len(chunk)), tci, last)
		} else {
			nicmodel.PutLegacyRxFrag(d, bufAddr, uint16(len(chunk)), o.csum, uint8(o.status), uint8(o.errors>>legacyErrShift), tci, last)
		}
	}
	faults += n.rxWriteBack(ring, descs)

	n.mu.Lock()
	defer n.mu.Unlock()
	qo := s.q * queueSize
	if n.regs[(RDH+qo)/4] == ring.Head { // software did not move the head meanwhile
		n.regs[(RDH+qo)/4] = (ring.Head + need) % ring.Count
	}
	c := &n.counters
	c.RxFrames++
	c.RxQueue[s.q]++
	c.RxDMAFaults += faults
	nicmodel.CountRx(n.regs, frame)
	nicmodel.AddStat(n.regs[:], PQGPRC+s.q*0x100, 1)
	nicmodel.AddStat(n.regs[:], PQGORC+s.q*0x100, uint64(len(frame)+nicmodel.FCSLen))
	if !s.quiet {
		n.queueCauseLocked(s.q, false)
	}
	return rxDone
}

// rxFetch reads the descriptors of a frame, len(b)/16 of them from the
// head, through the queue's prefetch cache.
func (n *NIC) rxFetch(q uint32, ring nicmodel.RxRing, b []byte) error {
	for i := range uint32(len(b) / descLen) {
		d, err := n.rx.pf[q].Desc(n.dma, ring, (ring.Head+i)%ring.Count, rxPrefetch)
		if err != nil {
			return err
		}
		copy(b[i*descLen:], d)
	}
	return nil
}

// rxWriteBack writes a frame's descriptors back from the head in ring
// order, in two pieces when they wrap. It returns how many writes the
// IOMMU refused.
func (n *NIC) rxWriteBack(ring nicmodel.RxRing, b []byte) (faults uint64) {
	first := min(uint32(len(b)/descLen), ring.Count-ring.Head) * descLen
	if n.dma.Write(ring.Base+uint64(ring.Head)*descLen, b[:first]) != nil {
		faults++
	}
	if len(b) > int(first) && n.dma.Write(ring.Base, b[first:]) != nil {
		faults++
	}
	return faults
}

// rxResult is what the receive offloads report for one frame.
type rxResult struct {
	status, errors uint32
	pktType        uint32
	rssType, hash  uint32
	pcsd           bool
	ipid, csum     uint16
}

// rxOffload verifies the checksums RXCSUM asks for and fills the packet
// type and the RSS fields.
func rxOffload(s *rxSetup, stored []byte) rxResult {
	p := &s.pkt
	o := rxResult{pcsd: s.rxcsum&nicmodel.RxcsumPCSD != 0, rssType: s.rssType, hash: s.rssHash}
	ipofl, tuofl := s.rxcsum&nicmodel.RxcsumIPOFL != 0, s.rxcsum&nicmodel.RxcsumTUOFL != 0
	if !ipofl && !tuofl {
		o.status |= RxdIXSM
	}
	switch {
	case s.l2:
		o.pktType = PktL2 | uint32(s.etqf)<<pktETQFSh
	case p.IPv4:
		o.pktType = PktIPv4
		if p.IPOpts {
			o.pktType |= PktIPv4E
		}
	case p.IPv6:
		o.pktType = PktIPv6
		if p.IPOpts {
			o.pktType |= PktIPv6E
		}
	}
	if p.L4 != nil && !s.l2 {
		switch p.Proto {
		case nicmodel.ProtoTCP:
			o.pktType |= PktTCP
		case nicmodel.ProtoUDP:
			o.pktType |= PktUDP
		case protoSCTP:
			o.pktType |= PktSCTP
		}
	}
	c := nicmodel.CheckRx(p, ipofl, tuofl)
	if c.IP {
		o.status |= RxdIPCS
	}
	if c.IPBad {
		o.errors |= RxdErrIPE
	}
	if c.L4 {
		o.status |= RxdL4I
	}
	if c.UDP {
		o.status |= RxdUDPCS
	}
	if c.L4Bad {
		o.errors |= RxdErrL4E
	}
	if p.IPHdr != nil {
		o.ipid = binary.BigEndian.Uint16(p.IPHdr[4:])
	}
	if !o.pcsd {
		o.csum = nicmodel.PacketChecksum(stored, int(s.rxcsum&nicmodel.RxcsumPCSSMask), s.rctl&nicmodel.RctlSECRC == 0)
	}
	return o
}

// writeBackAdv fills an advanced one-buffer write-back. Status beyond DD,
// and the errors, are reported in the last descriptor of a frame.
func (o *rxResult) writeBackAdv(wb []byte, length, tci uint16, last bool) {
	le := binary.LittleEndian
	le.PutUint32(wb[0:], o.rssType|o.pktType)
	if o.pcsd {
		le.PutUint32(wb[4:], o.hash)
	} else {
		le.PutUint16(wb[4:], o.ipid)
		le.PutUint16(wb[6:], o.csum)
	}
	stErr := uint32(RxdDD)
	if last {
		stErr |= RxdEOP | o.status | o.errors
	}
	le.PutUint32(wb[8:], stErr)
	le.PutUint16(wb[12:], length)
	le.PutUint16(wb[14:], 0)
	if last {
		le.PutUint16(wb[14:], tci)
	}
}
