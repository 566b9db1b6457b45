package netstack

import (
	"slices"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/stack/gro"
)

// rxPath is one queue's receive side. Only the goroutine polling the queue
// uses it, so it needs no lock.
//
// Receive coalescing (GRO): the TCP segments one poll finds are given to
// a gVisor GRO engine, which merges the in-order segments of a flow (same
// addresses, ports, ACK, options, full-sized) into one packet; the engine
// is flushed when the poll ends, so coalescing never delays a segment past
// the poll that received it. TCP then handles one large segment, and
// sends one ACK, where it would have handled dozens. Coalescing needs
// every frame's checksums verified before it (the merged packet's headers
// are rewritten, and gVisor trusts them only under
// CapabilityRXChecksumOffload), so it runs only while that capability is
// advertised.
type rxPath struct {
	e      *Endpoint
	gro    gro.GRO
	out    stackOut       // the engine's dispatcher: the stack, counted
	offers offers         // the recycle offers of this queue's packets
	batch  []nic.RxPacket // the frames of one poll, filled by the driver

	// Per poll, set by begin.
	rxcsum   bool // the stack trusts our checksums: frames are verified here
	coalesce bool // frames go through gro
	audit    bool // device-verified frames are verified here too
}

func (e *Endpoint) newQueue(q nic.Queue) *queue {
	nq := &queue{q: q}
	r := &nq.rx
	r.e = e
	r.out.n = &e.stats.rxDelivered
	r.reset()
	r.batch = make([]nic.RxPacket, e.opt.Budget)
	return nq
}

// reset gives the path a new, empty GRO engine. After a recovered panic
// the old engine's state cannot be trusted; packets it held are lost.
func (r *rxPath) reset() {
	r.gro = gro.GRO{}
	r.gro.Init(true)
	r.gro.Dispatcher = &r.out
}

// begin readies the path for one poll: whether checksums are ours to
// check and whether to coalesce are decided once for the whole poll, so
// that the frames of one poll are all treated alike.
func (r *rxPath) begin(e *Endpoint) {
	r.rxcsum = e.Capabilities()&stack.CapabilityRXChecksumOffload != 0
	r.coalesce = r.rxcsum && !e.groOff.Load()
	r.audit = e.audit.Load()
}

// end hands the stack what the poll's GRO engine still holds. One
// GRO.Flush delivers only the first packet of each of the engine's
// buckets (it unlinks a packet before reading the next), so it is called
// until one delivers nothing.
func (r *rxPath) end() {
	if !r.coalesce {
		return
	}
	for {
		before := r.out.given
		r.gro.Flush()
		if r.out.given == before {
			return
		}
	}
}

// stackOut is the stack as the GRO engine sees it: a dispatcher that
// counts the packets it is given.
type stackOut struct {
	d     stack.NetworkDispatcher // the dispatcher of the frame last delivered
	n     *atomic.Uint64
	given uint64 // packets delivered; the polling goroutine's
	fwd   *forwardHold
}

func (o *stackOut) DeliverNetworkPacket(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	o.n.Add(1)
	o.given++
	o.d.DeliverNetworkPacket(proto, pkt)
	o.fwd.release(pkt)
}

func (o *stackOut) DeliverLinkPacket(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	o.d.DeliverLinkPacket(proto, pkt)
}

// receive is one poll of the queue's receive side: the driver fills the
// path's batch with up to budget frames, and each goes up to the stack.
// It returns the descriptors the driver took.
func (r *rxPath) receive(q nic.Queue, budget int) int {
	if len(r.batch) < budget {
		r.batch = make([]nic.RxPacket, budget)
	}
	pkts := r.batch[:budget]
	n, taken := q.Receive(pkts)
	tap := r.e.capture.On() // one load per poll while nobody captures
	for i := range pkts[:n] {
		if tap {
			r.e.capture.Add(&pkts[i].Data)
		}
		r.toStack(&pkts[i])
		pkts[i] = nic.RxPacket{} // the stack owns the data now
	}
	return taken
}

// toStack hands one received frame to the stack, or to the GRO engine on
// its way there. The frame's buffer becomes the packet's payload as it
// is: no copy.
func (r *rxPath) toStack(p *nic.RxPacket) {
	e := r.e
	size := int(p.Data.Size())
	ref := e.dispatcher.Load()
	if ref == nil {
		e.stats.rxNoDispatcher.Add(1)
		p.Data.Release()
		return
	}
	if size < header.EthernetMinimumSize {
		e.stats.rxRunts.Add(1)
		p.Data.Release()
		return
	}
	opts := stack.PacketBufferOptions{Payload: p.Data}
	var o *offer
	if p.Recycle != nil {
		o = r.offers.take(p.Recycle)
		opts.OnRelease = o.run
	}
	pkt := stack.NewPacketBuffer(opts)
	if o != nil {
		o.pkt = pkt
	}
	defer done(pkt, o)
	hdr, ok := pkt.LinkHeader().Consume(header.EthernetMinimumSize)
	if !ok {
		e.stats.rxRunts.Add(1)
		return
	}
	eth := header.Ethernet(hdr)
	switch dst := eth.DestinationAddress(); {
	case dst == header.EthernetBroadcastAddress:
		pkt.PktType = tcpip.PacketBroadcast
	case header.IsMulticastEthernetAddress(dst):
		pkt.PktType = tcpip.PacketMulticast
	case dst == e.LinkAddress():
		pkt.PktType = tcpip.PacketHost
	default:
		pkt.PktType = tcpip.PacketOtherHost
	}
	proto := eth.Type()
	if trimToDatagram(proto, pkt) {
		e.stats.rxTrimmed.Add(1)
	}
	if p.CsumOK {
		e.stats.rxCsumHW.Add(1)
		if r.audit && !checksumsValid(proto, pkt) {
			e.stats.rxCsumHWWrong.Add(1)
			return
		}
	} else if r.rxcsum {
		// gVisor will trust this frame's checksums: check them here.
		e.stats.rxCsumSW.Add(1)
		if !checksumsValid(proto, pkt) {
			e.stats.rxCsumBad.Add(1)
			return
		}
	}
	e.stats.rxPackets.Add(1)
	e.stats.rxBytes.Add(uint64(size))
	pkt.NetworkProtocolNumber = proto
	pkt.RXChecksumValidated = r.rxcsum
	if !r.coalesce || pkt.PktType != tcpip.PacketHost {
		e.stats.rxDelivered.Add(1)
		ref.d.DeliverNetworkPacket(proto, pkt)
		e.fwd.release(pkt)
		return
	}
	r.out.d = ref.d
	r.out.fwd = e.fwd
	e.stats.rxGRO.Add(1)
	r.gro.Enqueue(pkt)
}

// trimToDatagram cuts what follows the IP datagram in pkt's frame and
// reports whether there was any. Ethernet pads a frame to 60 bytes, so a
// TCP segment of up to 5 bytes without options (a sender's zero-window
// probe of one byte among them) arrives with zeros behind it, and a
// device that keeps the CRC leaves 4 more bytes. gVisor's IP layer trims
// them, but its GRO takes a segment's length from the frame: a padded
// segment merged behind full ones put its padding into the stream, and
// the sender's next segment, overlapping it by as much, lost that much
// of its front to TCP's trimming. Zeros replaced data in a stream of the
// right length. A datagram longer than its frame is gVisor's to drop.
func trimToDatagram(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) bool {
	var n int
	switch proto {
	case header.IPv4ProtocolNumber:
		v, ok := pkt.Data().PullUp(header.IPv4MinimumSize)
		if !ok {
			return false
		}
		n = int(header.IPv4(v).TotalLength())
		if n < header.IPv4MinimumSize {
			return false // malformed: gVisor's to drop
		}
	case header.IPv6ProtocolNumber:
		v, ok := pkt.Data().PullUp(header.IPv6MinimumSize)
		if !ok {
			return false
		}
		pl := int(header.IPv6(v).PayloadLength())
		if pl == 0 {
			return false // a jumbogram: its length is in an option
		}
		n = header.IPv6MinimumSize + pl
	default:
		return false
	}
	if n >= pkt.Data().Size() {
		return false
	}
	pkt.Data().CapLength(n)
	return true
}

// An offer takes a driver's recycle hook (nic.RxPacket.Recycle) to the
// release of the packet built from the frame: as the packet's last
// reference goes, before its views are released, the hook is offered the
// first of them. Each offer is made once, with its bound release
// function, and belongs to one queue's offers, which lend it again once
// its packet is gone: a frame costs no allocation and no pool for it,
// and at most the one atomic add of a release on another goroutine.
type offer struct {
	pkt     *stack.PacketBuffer
	recycle func(*buffer.View)
	run     func()        // release, bound once
	lent    uint32        // times lent; the polling goroutine's
	here    uint32        // times released within delivery; the polling goroutine's
	inline  bool          // this loan's release runs within delivery
	back    atomic.Uint32 // times released otherwise; the packet's last holder adds
}

func newOffer() *offer {
	o := new(offer)
	o.run = o.release
	return o
}

// release runs on whichever goroutine drops the packet's last reference.
// The add is its last touch: from then on the queue may lend the offer
// again. A release within delivery leaves the count to done.
func (o *offer) release() {
	vl, _ := o.pkt.AsViewList()
	if v := vl.Front(); v != nil {
		o.recycle(v)
	}
	o.pkt, o.recycle = nil, nil
	if !o.inline {
		o.back.Add(1)
	}
}

// idle reports whether the packet of the offer's last loan is gone.
func (o *offer) idle() bool { return o.back.Load()+o.here == o.lent }

// done drops delivery's reference to pkt. When it is the last (the
// stack kept nothing: the frame was dropped, consumed, or copied), the
// release runs here, on the polling goroutine, and o is known back with
// no atomic. The count cannot grow meanwhile: only a holder can take a
// reference, and delivery is the only one.
func done(pkt *stack.PacketBuffer, o *offer) {
	if o == nil || pkt.ReadRefs() != 1 {
		pkt.DecRef()
		return
	}
	o.inline = true
	pkt.DecRef()
	o.inline = false
	o.here++
}

// offers is a queue's offers in the order they were lent, oldest at next;
// only the polling goroutine uses it. Packets usually go in the order
// they came, so the oldest loan is the one likely back: take looks at a
// few from there and passes over the ones the stack still holds, which
// it meets again a round later. With all of those held it makes a new
// offer, kept up to maxOffers, past which offers are made and left to the
// garbage collector.
type offers struct {
	ring []*offer
	next int
}

const (
	maxOffers   = 1024 // offers a queue keeps: packets the stack may hold at once, and then some
	offerProbes = 4    // held offers take passes over before making one
)

// take lends an idle offer, or a new one, for a packet with hook recycle.
func (l *offers) take(recycle func(*buffer.View)) *offer {
	for i := 0; i < offerProbes && i < len(l.ring); i++ {
		o := l.ring[l.next]
		if l.next++; l.next == len(l.ring) {
			l.next = 0
		}
		if o.idle() {
			o.lent++
			o.recycle = recycle
			return o
		}
	}
	o := newOffer()
	o.lent = 1
	o.recycle = recycle
	if len(l.ring) < maxOffers {
		// Newest, just behind the oldest at next.
		l.ring = slices.Insert(l.ring, l.next, o)
		if l.next++; l.next == len(l.ring) {
			l.next = 0
		}
	}
	return o
}

// checksumsValid verifies the IPv4 header checksum and the TCP or UDP
// checksum of an unfragmented datagram. Frames it cannot judge (other
// protocols, fragments, IPv6 extension headers) pass: gVisor checks their
// own checksums (ICMP, the IPv4 header of fragments) where it can.
func checksumsValid(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) bool {
	switch proto {
	case header.IPv4ProtocolNumber:
		v, ok := pkt.Data().PullUp(header.IPv4MinimumSize)
		if !ok {
			return true // too short: gVisor rejects it as malformed
		}
		ip := header.IPv4(v)
		hl := int(ip.HeaderLength())
		if hl < header.IPv4MinimumSize {
			return true
		}
		if v, ok = pkt.Data().PullUp(hl); !ok {
			return true
		}
		ip = header.IPv4(v)
		if !ip.IsChecksumValid() {
			return false
		}
		if ip.More() || ip.FragmentOffset() != 0 {
			return true
		}
		total := int(ip.TotalLength())
		if total < hl || total > pkt.Data().Size() {
			return true
		}
		return l4Valid(ip.TransportProtocol(), ip.SourceAddress(), ip.DestinationAddress(), pkt, hl, total-hl)
	case header.IPv6ProtocolNumber:
		v, ok := pkt.Data().PullUp(header.IPv6MinimumSize)
		if !ok {
			return true
		}
		ip := header.IPv6(v)
		n := int(ip.PayloadLength())
		if header.IPv6MinimumSize+n > pkt.Data().Size() {
			return true
		}
		return l4Valid(ip.TransportProtocol(), ip.SourceAddress(), ip.DestinationAddress(), pkt, header.IPv6MinimumSize, n)
	}
	return true
}

// l4Valid checks the TCP or UDP checksum of the segment at [off, off+n) of
// pkt's data.
func l4Valid(proto tcpip.TransportProtocolNumber, src, dst tcpip.Address, pkt *stack.PacketBuffer, off, n int) bool {
	switch proto {
	case header.TCPProtocolNumber:
		if n < header.TCPMinimumSize {
			return true
		}
	case header.UDPProtocolNumber:
		if n < header.UDPMinimumSize {
			return true
		}
	default:
		return true
	}
	// A received frame is one view, so this pulls up without copying.
	b, ok := pkt.Data().PullUp(off + n)
	if !ok {
		return true
	}
	seg := b[off : off+n]
	if proto == header.UDPProtocolNumber && src.Len() == header.IPv4AddressSize && header.UDP(seg).Checksum() == 0 {
		return true // IPv4 UDP sent without a checksum
	}
	sum := header.PseudoHeaderChecksum(proto, src, dst, uint16(n))
	return checksum.Checksum(seg, sum) == 0xffff
}
