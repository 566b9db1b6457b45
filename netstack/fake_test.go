package netstack_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// fakeNIC is an in-memory driver: what one side transmits arrives in the
// other side's RX queue (see crossWire). Like a driver it inserts
// checksums and segments GSO packets in software, and it keeps a capture
// of what went on the wire so tests can check frame sizes and offloads.
type fakeNIC struct {
	name string
	mac  [6]byte
	q    *fakeQueue

	mu      sync.Mutex
	peer    *fakeNIC
	link    nic.Link
	feat    nic.Features
	mtu     int
	closed  bool
	ringLen int  // TX descriptors
	stall   bool // TX completions stop (Reclaim frees nothing)

	// Counters read by the tests (under mu).
	wireFrames   int
	wireMax      int // largest frame put on the wire
	gsoPackets   int // GSO packets taken
	gsoNoTSO     int // GSO packets taken while the features said TSO off
	csumInserted int
	rxMissed     int // frames lost because the RX queue was full
}

type fakeQueue struct {
	n          *fakeNIC
	rx         chan []byte
	unverified chan []byte // delivered with CsumOK false
	vouched    chan []byte // delivered with CsumOK true, whatever their checksums
	kick       chan struct{}
	paused     atomic.Bool
	panicNext  atomic.Bool // the next Poll panics, as a driver bug would
	refuseNext atomic.Bool // Transmit refuses the next packet
	inflight   int         // TX descriptors in use, freed by Reclaim
}

func newFakeNIC(name string, last byte) *fakeNIC {
	n := &fakeNIC{
		name:    name,
		mac:     [6]byte{0x02, 0, 0, 0, 0, last},
		link:    nic.Link{Up: true, SpeedMbps: 1000, FullDuplex: true},
		feat:    nic.Features{RxChecksum: true, TxChecksum: true, TSOv4: true, TSOv6: true, MaxGSO: 64 << 10},
		mtu:     1500,
		ringLen: 256,
	}
	n.q = &fakeQueue{n: n, rx: make(chan []byte, 1024), unverified: make(chan []byte, 16), vouched: make(chan []byte, 16), kick: make(chan struct{}, 1)}
	return n
}

// crossWire joins a and b like a cable.
func crossWire(a, b *fakeNIC) {
	a.mu.Lock()
	a.peer = b
	a.mu.Unlock()
	b.mu.Lock()
	b.peer = a
	b.mu.Unlock()
}

func (n *fakeNIC) Name() string { return n.name }
func (n *fakeNIC) MAC() [6]byte { return n.mac }
func (n *fakeNIC) MTU() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mtu
}
func (n *fakeNIC) SetMTU(mtu int) error {
	if mtu < 68 || mtu > 9000 {
		return fmt.Errorf("%s: mtu %d out of range", n.name, mtu)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mtu = mtu
	return nil
}
func (n *fakeNIC) Link() nic.Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.link
}
func (n *fakeNIC) Features() nic.Features {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.feat
}
func (n *fakeNIC) setFeatures(f nic.Features) {
	n.mu.Lock()
	n.feat = f
	n.mu.Unlock()
}
func (n *fakeNIC) setLink(l nic.Link) {
	n.mu.Lock()
	n.link = l
	n.mu.Unlock()
}
func (n *fakeNIC) Queues() []nic.Queue { return []nic.Queue{n.q} }
func (n *fakeNIC) Stats() []nic.Stat {
	n.mu.Lock()
	defer n.mu.Unlock()
	return []nic.Stat{{Name: "wire_frames", Value: uint64(n.wireFrames)}}
}
func (n *fakeNIC) Ctl(cmd string) error { return fmt.Errorf("%s: unknown command %q", n.name, cmd) }
func (n *fakeNIC) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("already closed")
	}
	n.closed = true
	return nil
}

func (n *fakeNIC) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// counters returns a snapshot of the wire counters.
func (n *fakeNIC) counters() (frames, max, gso, gsoNoTSO, csum int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.wireFrames, n.wireMax, n.gsoPackets, n.gsoNoTSO, n.csumInserted
}

// inject puts a frame into n's RX queue as if it came off the wire.
func (n *fakeNIC) inject(frame []byte) {
	select {
	case n.q.rx <- frame:
		n.q.signal()
	default:
		n.mu.Lock()
		n.rxMissed++
		n.mu.Unlock()
	}
}

func (q *fakeQueue) pause() { q.paused.Store(true) }
func (q *fakeQueue) resume() {
	q.paused.Store(false)
	q.signal()
}

func (q *fakeQueue) signal() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// RxReady says whether a frame waits, as a driver reads a done bit.
func (q *fakeQueue) RxReady() bool {
	return !q.paused.Load() && len(q.rx)+len(q.unverified)+len(q.vouched) > 0
}

// Receive fills pkts with up to len(pkts) frames, reporting a verified
// checksum the way a device with RX checksum offload would.
func (q *fakeQueue) Receive(pkts []nic.RxPacket) (int, int) {
	n := q.receive(pkts)
	return n, n
}

func (q *fakeQueue) receive(pkts []nic.RxPacket) int {
	budget := len(pkts)
	if q.paused.Load() {
		return 0
	}
	if q.panicNext.CompareAndSwap(true, false) {
		panic("fake driver: injected fault")
	}
	rxcsum := q.n.Features().RxChecksum
	n := 0
	for n < budget {
		select {
		case f := <-q.unverified:
			pkts[n] = nic.RxPacket{Data: buffer.MakeWithData(f)}
			n++
			continue
		case f := <-q.vouched:
			pkts[n] = nic.RxPacket{Data: buffer.MakeWithData(f), CsumOK: true}
			n++
			continue
		default:
		}
		select {
		case f := <-q.rx:
			pkts[n] = nic.RxPacket{Data: buffer.MakeWithData(f), CsumOK: rxcsum && l4ChecksumOK(f)}
			n++
		default:
			return n
		}
	}
	return n
}

// Transmit takes as many packets as the ring has room for.
func (q *fakeQueue) Transmit(pkts []*nic.TxPacket) (int, error) {
	n := q.n
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return 0, errors.New("closed")
	}
	if q.refuseNext.CompareAndSwap(true, false) {
		n.mu.Unlock()
		return 0, errors.New("fake driver: malformed packet")
	}
	room := n.ringLen - q.inflight
	if room > len(pkts) {
		room = len(pkts)
	}
	peer, feat, mtu := n.peer, n.feat, n.mtu
	var out [][]byte
	for _, p := range pkts[:room] {
		q.inflight++
		frame := p.Data.Flatten()
		p.Data.Release()
		if p.GSO != nic.GSONone {
			n.gsoPackets++
			if !feat.TSOv4 && !feat.TSOv6 {
				n.gsoNoTSO++
			}
		}
		if p.NeedsCsum {
			n.csumInserted++
		}
		segs, err := softOffload(frame, p)
		if err != nil {
			continue // a real driver counts and drops it
		}
		for _, s := range segs {
			if len(s) > mtu+header.EthernetMinimumSize {
				continue // the MAC would refuse an oversized frame
			}
			n.wireFrames++
			if len(s) > n.wireMax {
				n.wireMax = len(s)
			}
			out = append(out, s)
		}
	}
	up := n.link.Up
	n.mu.Unlock()
	if peer != nil && up {
		for _, s := range out {
			peer.inject(s)
		}
	}
	return room, nil
}

func (q *fakeQueue) Reclaim() int {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	if q.n.stall {
		return 0
	}
	freed := q.inflight
	q.inflight = 0
	return freed
}

func (q *fakeQueue) Wait(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-q.kick:
		return true
	case <-t.C:
		return false
	}
}

// softOffload does what the hardware would: checksum insertion and TCP
// segmentation (RFC 793 sequence numbers, flags on the right segment, new
// IPv4 ids, lengths and checksums recomputed per segment).
func softOffload(frame []byte, p *nic.TxPacket) ([][]byte, error) {
	if p.GSO == nic.GSONone {
		if p.NeedsCsum {
			at := int(p.CsumStart) + int(p.CsumOffset)
			if at+2 > len(frame) {
				return nil, fmt.Errorf("checksum offset %d beyond frame of %d", at, len(frame))
			}
			// The field holds the pseudo-header sum: fold the rest in.
			binary.BigEndian.PutUint16(frame[at:], ^checksum.Checksum(frame[p.CsumStart:], 0))
		}
		return [][]byte{frame}, nil
	}
	l2 := header.EthernetMinimumSize
	l3, l4 := int(p.L3Len), int(p.L4Len)
	hl := l2 + l3 + l4
	if p.MSS == 0 || hl > len(frame) {
		return nil, fmt.Errorf("bad GSO packet: mss %d headers %d frame %d", p.MSS, hl, len(frame))
	}
	payload := frame[hl:]
	mss := int(p.MSS)
	var segs [][]byte
	for off, i := 0, 0; off < len(payload); off, i = off+mss, i+1 {
		end := min(off+mss, len(payload))
		s := make([]byte, hl+end-off)
		copy(s, frame[:hl])
		copy(s[hl:], payload[off:end])
		tcp := header.TCP(s[l2+l3:])
		tcp.SetSequenceNumber(tcp.SequenceNumber() + uint32(off))
		flags := tcp.Flags()
		if end < len(payload) {
			flags &^= header.TCPFlagFin | header.TCPFlagPsh
		}
		if i > 0 {
			flags &^= header.TCPFlagCwr
		}
		tcp.SetFlags(uint8(flags))
		var src, dst []byte
		if p.GSO == nic.GSOTCPv4 {
			ip := header.IPv4(s[l2:])
			ip.SetTotalLength(uint16(l3 + l4 + end - off))
			ip.SetID(ip.ID() + uint16(i))
			ip.SetChecksum(0)
			ip.SetChecksum(^ip.CalculateChecksum())
			src, dst = ip.SourceAddressSlice(), ip.DestinationAddressSlice()
		} else {
			ip := header.IPv6(s[l2:])
			ip.SetPayloadLength(uint16(l3 - header.IPv6MinimumSize + l4 + end - off))
			src, dst = ip[8:24], ip[24:40]
		}
		tcp.SetChecksum(0)
		tcp.SetChecksum(^checksum.Checksum(s[l2+l3:], pseudo(src, dst, len(s)-l2-l3)))
		segs = append(segs, s)
	}
	return segs, nil
}

// pseudo is the TCP pseudo-header sum of RFC 793 / RFC 8200.
func pseudo(src, dst []byte, n int) uint16 {
	sum := checksum.Checksum(src, 0)
	sum = checksum.Checksum(dst, sum)
	var b [4]byte
	binary.BigEndian.PutUint16(b[0:], uint16(header.TCPProtocolNumber))
	binary.BigEndian.PutUint16(b[2:], uint16(n))
	return checksum.Checksum(b[:], sum)
}

// l4ChecksumOK verifies an unfragmented IPv4 or IPv6 TCP/UDP frame's
// checksum, as RX checksum offload hardware does; false for anything else.
func l4ChecksumOK(f []byte) bool {
	if len(f) < header.EthernetMinimumSize {
		return false
	}
	eth := header.Ethernet(f)
	b := f[header.EthernetMinimumSize:]
	var (
		proto    uint8
		src, dst []byte
		seg      []byte
	)
	switch eth.Type() {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(b)
		if !ip.IsValid(len(b)) || ip.More() || ip.FragmentOffset() != 0 {
			return false
		}
		proto, src, dst = ip.Protocol(), ip.SourceAddressSlice(), ip.DestinationAddressSlice()
		seg = b[ip.HeaderLength():ip.TotalLength()]
	case header.IPv6ProtocolNumber:
		ip := header.IPv6(b)
		if !ip.IsValid(len(b)) {
			return false
		}
		proto, src, dst = ip.NextHeader(), ip[8:24], ip[24:40]
		seg = b[header.IPv6MinimumSize : header.IPv6MinimumSize+int(ip.PayloadLength())]
	default:
		return false
	}
	if proto != uint8(header.TCPProtocolNumber) && proto != uint8(header.UDPProtocolNumber) {
		return false
	}
	sum := checksum.Checksum(src, 0)
	sum = checksum.Checksum(dst, sum)
	var ph [4]byte
	binary.BigEndian.PutUint16(ph[0:], uint16(proto))
	binary.BigEndian.PutUint16(ph[2:], uint16(len(seg)))
	sum = checksum.Checksum(ph[:], sum)
	return checksum.Checksum(seg, sum) == 0xffff
}
