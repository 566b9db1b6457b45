package m82574

import (
	"encoding/binary"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

const (
	maxFrame      = 1518 // with FCS, untagged
	maxJumboFrame = 9018 // with RCTL.LPE
	minFrameFCS   = 64
)

// rxEngine is the receive DMA engine's state; rxMu guards it.
type rxEngine struct {
	stored  nicmodel.RxFrame // the frame as stored: VLAN tag stripped, FCS kept
	pf      nicmodel.RxPrefetch
	wb      []byte // this frame's write-backs
	pending []heldWB
	fault   RxFault
	key     [40]byte
}

// heldWB is a descriptor write-back held back to complete out of order.
type heldWB struct {
	addr uint64
	wb   [descLen]byte
}

// rxSetup is what the engine needs from the registers for one frame.
type rxSetup struct {
	rctl, rfctl, rxcsum, mrqc uint32
	vme                       bool
	vet                       uint16
	base                      uint64
	count, head, tail         uint32
	ringGen                   uint64
	fault                     RxFault
}

// receive takes one frame from the wire: the address filter and the
// size checks run as it arrives; then it is written to the ring at once,
// or, with Options.DeferRx, it waits in the packet buffer.
func (n *NIC) receive(frame []byte) {
	n.mu.Lock()
	ok := n.rxAdmitLocked(frame)
	n.mu.Unlock()
	if !ok {
		return
	}
	if n.pb != nil {
		if !n.pb.Push(frame, struct{}{}) {
			n.mu.Lock()
			nicmodel.AddStat(n.regs[:], nicmodel.MPC, 1)
			n.counters.RxNoDescriptor++
			n.causeLocked(nicmodel.IntRXO)
			n.mu.Unlock()
			return
		}
		n.irq.Raise() // wake the driver: its next register access moves the frame
		return
	}
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	if !n.rxFrame(frame) {
		n.mu.Lock()
		nicmodel.AddStat(n.regs[:], nicmodel.MPC, 1)
		nicmodel.AddStat(n.regs[:], nicmodel.RNBC, 1)
		n.counters.RxNoDescriptor++
		n.causeLocked(nicmodel.IntRXO)
		n.mu.Unlock()
	}
}

// rxFrame writes one admitted frame into the ring. It reports false, and
// changes nothing, when the receiver is off or too few descriptors are
// free. rxMu is held.
func (n *NIC) rxFrame(frame []byte) bool {
	e := &n.rx
	n.mu.Lock()
	s := n.rxSetupLocked()
	n.mu.Unlock()
	if s.rctl&nicmodel.RctlEN == 0 {
		return false
	}

	// What goes into the buffers: the frame, its VLAN tag stripped when
	// CTRL.VME says so, its FCS kept unless RCTL.SECRC strips it.
	tagged := nicmodel.Tagged(frame, s.vet)
	strip := tagged && s.vme
	data, tci := e.stored.Build(frame, strip, s.rctl&nicmodel.RctlSECRC == 0)

	bsize := rxBufSize(s.rctl)
	need := uint32((len(data) + bsize - 1) / bsize)
	ring := nicmodel.RxRing{Base: s.base, Count: s.count, Head: s.head, Tail: s.tail, Gen: s.ringGen}
	free := ring.Free()
	if need > free {
		return false
	}
	if s.fault.Frames > 0 {
		e.fault.Frames--
	} else {
		s.fault = RxFault{}
	}

	off := rxOffload(frame, s, e)
	if strip {
		off.status |= RxdVP
	}
	if s.rxcsum&nicmodel.RxcsumPCSD == 0 {
		off.pktCsum = nicmodel.PacketChecksum(data, int(s.rxcsum&nicmodel.RxcsumPCSSMask), s.rctl&nicmodel.RctlSECRC == 0)
	}
	off.errors |= s.fault.Errors

	ext := s.rfctl&RfctlEXSTEN != 0
	e.wb = nicmodel.Grow(e.wb, int(need)*descLen)
	var faults uint64
	for j := range need {
		slot := (s.head + j) % s.count
		d, err := e.pf.Desc(n.dma, ring, slot, rxPrefetchLen)
		if err != nil {
			// Without its descriptor the frame has nowhere to go.
			n.mu.Lock()
			n.counters.RxDMAFaults += faults + 1
			n.mu.Unlock()
			return true
		}
		bufAddr := binary.LittleEndian.Uint64(d)
		chunk := data[int(j)*bsize : min(int(j+1)*bsize, len(data))]
		target := bufAddr
		if s.fault.DMAFault {
			target = unmappedIOVA
		}
		if err := n.dma.Write(target, chunk); err != nil {
			// The hardware still completes the descriptor: software
			// learns of the fault from the IOMMU, not from the ring.
			faults++
		}
		length := uint16(len(chunk))
		if s.fault.SetLength {
			length = s.fault.Length
		}
		wb := e.wb[j*descLen : (j+1)*descLen]
		last := j == need-1
		if ext {
			writeBackExt(wb, off, length, tci, last)
		} else {
			nicmodel.PutLegacyRxFrag(wb, bufAddr, length, off.pktCsum, uint8(off.status), uint8(off.errors>>legacyErrShift), tci, last)
		}
	}
	faults += n.rxComplete(s, need, s.fault.OutOfOrder)

	n.mu.Lock()
	if n.regs[RDH/4] == s.head {
		n.regs[RDH/4] = (s.head + need) % s.count
	}
	n.counters.RxFrames++
	n.counters.RxDMAFaults += faults
	nicmodel.CountRx(n.regs[:], frame)
	causes := uint32(nicmodel.IntRXT0 | IntRXQ0)
	if free-need <= s.count>>(1+s.rctl>>RctlRDMTSh&3) {
		causes |= nicmodel.IntRXDMT0
	}
	n.causeLocked(causes)
	n.mu.Unlock()
	return true
}

// rxComplete writes the frame's descriptors back, or holds them until the
// next frame's are written when the fault injection asks for out-of-order
// completion. It returns how many write-backs the IOMMU refused.
func (n *NIC) rxComplete(s rxSetup, need uint32, hold bool) (faults uint64) {
	e := &n.rx
	for j := range need {
		addr := s.base + uint64((s.head+j)%s.count)*descLen
		wb := e.wb[j*descLen : (j+1)*descLen]
		if hold {
			e.pending = append(e.pending, heldWB{addr: addr, wb: [descLen]byte(wb)})
		} else if n.dma.Write(addr, wb) != nil {
			faults++
		}
	}
	if hold {
		return faults
	}
	return faults + n.flushHeld()
}

func (n *NIC) flushHeld() (faults uint64) {
	e := &n.rx
	for i := range e.pending {
		if n.dma.Write(e.pending[i].addr, e.pending[i].wb[:]) != nil {
			faults++
		}
	}
	e.pending = e.pending[:0]
	return faults
}

// rxAdmitLocked applies the receiver state, size limits and address
// filters, and counts the frame.
func (n *NIC) rxAdmitLocked(f []byte) bool {
	r := &n.regs
	rctl := r[nicmodel.RCTL/4]
	if rctl&nicmodel.RctlEN == 0 || !n.linkWas.up || len(f) < nicmodel.EthHdrLen {
		n.counters.RxOff++
		return false
	}
	l := len(f) + nicmodel.FCSLen
	nicmodel.AddStat(n.regs[:], nicmodel.TPR, 1)
	nicmodel.AddStat64(n.regs[:], nicmodel.TORL, uint64(l))
	tagged := nicmodel.Tagged(f, uint16(r[nicmodel.VET/4]))
	limit := maxFrame
	if rctl&nicmodel.RctlLPE != 0 {
		limit = maxJumboFrame
	}
	if tagged {
		limit += nicmodel.VLANTagLen
	}
	switch {
	case l < minFrameFCS:
		nicmodel.AddStat(n.regs[:], nicmodel.RUC, 1)
		n.counters.RxBadSize++
		return false
	case l > limit:
		nicmodel.AddStat(n.regs[:], nicmodel.ROC, 1)
		n.counters.RxBadSize++
		return false
	}
	if !n.acceptLocked(f, rctl) || tagged && rctl&nicmodel.RctlVFE != 0 && !n.vlanAcceptLocked(f) {
		n.counters.RxFiltered++
		return false
	}
	return true
}

// rxSetupLocked takes the ring and offload set-up for the next frame.
// rxMu is held too (it guards the fault and the key).
func (n *NIC) rxSetupLocked() rxSetup {
	r := &n.regs
	s := rxSetup{
		rctl: r[nicmodel.RCTL/4], rfctl: r[nicmodel.RFCTL/4], rxcsum: r[nicmodel.RXCSUM/4], mrqc: r[nicmodel.MRQC/4],
		vme: r[nicmodel.CTRL/4]&nicmodel.CtrlVME != 0, vet: uint16(r[nicmodel.VET/4]),
		base:  uint64(r[RDBAH/4])<<32 | uint64(r[RDBAL/4]),
		count: r[RDLEN/4] / descLen, head: r[RDH/4], tail: r[RDT/4],
		ringGen: n.rxRingGen, fault: n.rx.fault,
	}
	if !n.linkWas.up {
		s.rctl &^= nicmodel.RctlEN
	}
	if s.rxcsum&nicmodel.RxcsumPCSD != 0 && s.mrqc&MrqcRSSEnable != 0 {
		for i := range 10 {
			binary.LittleEndian.PutUint32(n.rx.key[4*i:], r[nicmodel.RSSRK/4+uint32(i)])
		}
	}
	return s
}

// acceptLocked is the destination address filter: exact matches in the
// receive address registers, then broadcast (BAM), multicast (MPE or the
// MTA hash) and unicast promiscuous (UPE).
func (n *NIC) acceptLocked(f []byte, rctl uint32) bool {
	if nicmodel.IsBroadcast(f) {
		return rctl&nicmodel.RctlBAM != 0
	}
	lo := binary.LittleEndian.Uint32(f[0:4])
	hi := uint32(binary.LittleEndian.Uint16(f[4:6]))
	for i := range uint32(numRAR) {
		rah := n.regs[nicmodel.RAL0/4+2*i+1]
		if rah&nicmodel.RahAV != 0 && n.regs[nicmodel.RAL0/4+2*i] == lo && rah&0xffff == hi {
			return true
		}
	}
	if f[0]&1 != 0 {
		if rctl&nicmodel.RctlMPE != 0 {
			return true
		}
		return nicmodel.TableBit(n.regs[nicmodel.MTA/4:], nicmodel.MTAHash(f, rctl>>nicmodel.RctlMOSh))
	}
	return rctl&nicmodel.RctlUPE != 0
}

func (n *NIC) vlanAcceptLocked(f []byte) bool {
	return nicmodel.TableBit(n.regs[nicmodel.VFTA/4:], nicmodel.VLANID(f))
}

// rxBufSize decodes the receive buffer size from RCTL: FLXBUF in KiB when
// set, else BSIZE scaled by 16 when BSEX is set.
func rxBufSize(rctl uint32) int {
	if flx := rctl >> RctlFLXSh & 0xf; flx != 0 {
		return int(flx) << 10
	}
	size := 2048 >> (rctl >> nicmodel.RctlBSIZSh & 3)
	if rctl&RctlBSEX != 0 {
		if rctl>>nicmodel.RctlBSIZSh&3 == 0 {
			return 2048 // reserved encoding
		}
		size *= 16
	}
	return size
}

// writeBackExt fills an extended RX descriptor write-back: MRQ, RSS hash
// or IP identification and packet checksum, extended status and errors,
// length and VLAN tag. Status beyond DD, and the errors, are reported in
// the last descriptor of a frame.
func writeBackExt(wb []byte, o rxResult, length, tci uint16, last bool) {
	le := binary.LittleEndian
	clear(wb)
	stErr := uint32(RxdDD)
	if last {
		stErr |= RxdEOP | o.status | o.errors
		le.PutUint16(wb[14:], tci)
	}
	if o.pcsd {
		le.PutUint32(wb[0:], o.mrq)
		le.PutUint32(wb[4:], o.rss)
	} else {
		le.PutUint16(wb[4:], o.ipid)
		le.PutUint16(wb[6:], o.pktCsum)
	}
	le.PutUint32(wb[8:], stErr)
	le.PutUint16(wb[12:], length)
}

// rxPrefetchLen is how many descriptors one fetch reads ahead.
const rxPrefetchLen = 8
