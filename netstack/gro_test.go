package netstack_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// capture is a stack that keeps a copy of every IP packet it is given.
type capture struct {
	mu   sync.Mutex
	pkts [][]byte
}

func (c *capture) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pkts = append(c.pkts, pkt.Data().AsRange().ToSlice())
}
func (c *capture) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

func (c *capture) take() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pkts
	c.pkts = nil
	return p
}

// tcpSeg describes one TCP segment of a flow from addrB to addrA, from
// port 40000 unless sport says otherwise.
type tcpSeg struct {
	seq   uint32
	flags header.TCPFlags
	data  []byte
	sport uint16
}

// tcpFrame builds an Ethernet frame carrying seg over IPv4 or IPv6 (by
// the addresses), with correct checksums.
func tcpFrame(srcMAC, dstMAC [6]byte, src, dst netip.Addr, seg tcpSeg) []byte {
	s, d := tcpip.AddrFromSlice(src.AsSlice()), tcpip.AddrFromSlice(dst.AsSlice())
	tcpLen := header.TCPMinimumSize + len(seg.data)
	ipLen, ethType := header.IPv4MinimumSize, header.IPv4ProtocolNumber
	if src.Is6() {
		ipLen, ethType = header.IPv6MinimumSize, header.IPv6ProtocolNumber
	}
	b := make([]byte, header.EthernetMinimumSize+ipLen+tcpLen)
	header.Ethernet(b).Encode(&header.EthernetFields{SrcAddr: tcpip.LinkAddress(srcMAC[:]), DstAddr: tcpip.LinkAddress(dstMAC[:]), Type: ethType})
	l3 := b[header.EthernetMinimumSize:]
	if src.Is6() {
		header.IPv6(l3).Encode(&header.IPv6Fields{PayloadLength: uint16(tcpLen), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64, SrcAddr: s, DstAddr: d})
	} else {
		ip := header.IPv4(l3)
		ip.Encode(&header.IPv4Fields{TotalLength: uint16(ipLen + tcpLen), ID: uint16(seg.seq), TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: s, DstAddr: d})
		ip.SetChecksum(^ip.CalculateChecksum())
	}
	tcp := header.TCP(l3[ipLen:])
	sport := seg.sport
	if sport == 0 {
		sport = 40000
	}
	tcp.Encode(&header.TCPFields{SrcPort: sport, DstPort: 80, SeqNum: seg.seq, AckNum: 7, DataOffset: header.TCPMinimumSize, Flags: seg.flags, WindowSize: 65535})
	copy(tcp[header.TCPMinimumSize:], seg.data)
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, s, d, uint16(tcpLen))
	tcp.SetChecksum(^tcp.CalculateChecksum(checksum.Checksum(seg.data, xsum)))
	return b
}

// groRig is an endpoint polled by hand over a fake NIC, with a capturing
// stack attached.
type groRig struct {
	n   *fakeNIC
	ep  *netstack.Endpoint
	got capture
	src netip.Addr // the far end
	dst netip.Addr // the endpoint's address
}

func newGRORig(t *testing.T, v6 bool, opt netstack.Options) *groRig {
	t.Helper()
	r := &groRig{n: newFakeNIC("ether0", 1), src: addrB.Addr(), dst: addrA.Addr()}
	if v6 {
		r.src, r.dst = addrB6.Addr(), addrA6.Addr()
	}
	opt.Manual = true
	var err error
	if r.ep, err = netstack.New(r.n, opt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.ep.Close)
	r.ep.Attach(&r.got)
	return r
}

// send injects segs as frames and returns their IP packets.
func (r *groRig) send(segs ...tcpSeg) [][]byte {
	var ips [][]byte
	for _, s := range segs {
		f := tcpFrame([6]byte{2, 0, 0, 0, 0, 9}, r.n.MAC(), r.src, r.dst, s)
		ips = append(ips, f[header.EthernetMinimumSize:])
		r.n.inject(f)
	}
	return ips
}

func (r *groRig) poll(t *testing.T) [][]byte {
	t.Helper()
	if _, err := r.ep.Poll(0, 64); err != nil {
		t.Fatal(err)
	}
	return r.got.take()
}

// payload is n bytes that differ from segment to segment.
func payload(seg, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seg*131 + i*7)
	}
	return b
}

// A burst of full-sized, in-order segments of one flow goes up as one
// packet whose headers say so and whose payload is the segments' payloads
// byte for byte.
func TestGROCoalescesInOrderBurst(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			r := newGRORig(t, v6, netstack.Options{})
			const n, mss, seq0 = 16, 1000, 1 << 31
			var segs []tcpSeg
			var want []byte
			for i := range n {
				d := payload(i, mss)
				segs = append(segs, tcpSeg{seq: seq0 + uint32(i*mss), flags: header.TCPFlagAck, data: d})
				want = append(want, d...)
			}
			sent := r.send(segs...)
			got := r.poll(t)
			if len(got) != 1 {
				t.Fatalf("%d segments went up as %d packets, want 1", n, len(got))
			}
			p := got[0]
			ipLen := header.IPv4MinimumSize
			if v6 {
				ipLen = header.IPv6MinimumSize
				if pl := header.IPv6(p).PayloadLength(); int(pl) != header.TCPMinimumSize+len(want) {
					t.Errorf("IPv6 payload length %d, want %d", pl, header.TCPMinimumSize+len(want))
				}
			} else if tl := header.IPv4(p).TotalLength(); int(tl) != ipLen+header.TCPMinimumSize+len(want) {
				t.Errorf("IPv4 total length %d, want %d", tl, ipLen+header.TCPMinimumSize+len(want))
			}
			tcp := header.TCP(p[ipLen:])
			if tcp.SequenceNumber() != seq0 || tcp.AckNumber() != 7 || tcp.Flags() != header.TCPFlagAck {
				t.Errorf("merged header: seq %d ack %d flags %v", tcp.SequenceNumber(), tcp.AckNumber(), tcp.Flags())
			}
			if !bytes.Equal(tcp.Payload(), want) {
				t.Errorf("merged payload (%d bytes) differs from the %d bytes sent", len(tcp.Payload()), len(want))
			}
			// The headers up to the lengths are the first segment's.
			if !bytes.Equal(p[ipLen:ipLen+header.TCPMinimumSize], sent[0][ipLen:ipLen+header.TCPMinimumSize]) {
				t.Errorf("merged TCP header differs from the first segment's")
			}
			if g, d := stat(t, r.ep, "rx_gro"), stat(t, r.ep, "rx_delivered"); g != n || d != 1 {
				t.Errorf("rx_gro %d rx_delivered %d, want %d and 1", g, d, n)
			}
		})
	}
}

// Every packet the engine holds goes up when the poll ends, not only the
// first of each of its buckets: gVisor's GRO.Flush stops at the first
// packet of a bucket (it reads the next after unlinking the packet), so
// a flow that shares a bucket with another (its addresses and ports
// summed, modulo 8) waited for a later poll, and with the link idle for
// the interrupt's timeout.
func TestGROPollDeliversAllFlows(t *testing.T) {
	r := newGRORig(t, false, netstack.Options{})
	const mss = 1000
	var segs []tcpSeg
	// Ports 8 apart: the same bucket. Each flow's segments merge.
	for _, sport := range []uint16{40000, 40008, 40016} {
		for i := range 3 {
			segs = append(segs, tcpSeg{seq: 1000 + uint32(i*mss), flags: header.TCPFlagAck, data: payload(i, mss), sport: sport})
		}
	}
	r.send(segs...)
	got := r.poll(t)
	flows := map[uint16]int{}
	for _, p := range got {
		tcp := header.TCP(p[header.IPv4MinimumSize:])
		flows[tcp.SourcePort()] += len(tcp.Payload())
	}
	if len(got) != 3 || flows[40000] != 3*mss || flows[40008] != 3*mss || flows[40016] != 3*mss {
		t.Errorf("one poll delivered %d packets, payload bytes by source port %v; want 3 packets of %d bytes each", len(got), flows, 3*mss)
	}
	if d := stat(t, r.ep, "rx_delivered"); d != 3 {
		t.Errorf("rx_delivered %d, want 3", d)
	}
}

// Frames GRO must not merge reach the stack unchanged and in order: other
// protocols, out-of-order and repeated segments, SYN, RST, bare ACKs, and everything
// once GRO is off or the stack does not trust our checksums.
func TestGROPassesThroughUntouched(t *testing.T) {
	const mss = 500
	seg := func(i int, flags header.TCPFlags) tcpSeg {
		return tcpSeg{seq: 100 + uint32(i*mss), flags: flags, data: payload(i, mss)}
	}
	ack := header.TCPFlagAck
	for _, v6 := range []bool{false, true} {
		for _, tc := range []struct {
			name string
			opt  netstack.Options
			prep func(t *testing.T, r *groRig)
			segs []tcpSeg
		}{
			{name: "out of order", segs: []tcpSeg{seg(0, ack), seg(2, ack), seg(1, ack), seg(4, ack), seg(3, ack)}},
			{name: "retransmission", segs: []tcpSeg{seg(0, ack), seg(0, ack), seg(0, ack)}},
			{name: "rst", segs: []tcpSeg{seg(0, ack), seg(1, ack|header.TCPFlagRst)}},
			{name: "syn", segs: []tcpSeg{{seq: 99, flags: header.TCPFlagSyn}, seg(0, ack)}},
			{name: "bare acks", segs: []tcpSeg{{seq: 100, flags: ack}, {seq: 100, flags: ack}}},
			{name: "gro off option", opt: netstack.Options{NoGRO: true}, segs: []tcpSeg{seg(0, ack), seg(1, ack), seg(2, ack)}},
			{name: "gro off ctl", prep: func(t *testing.T, r *groRig) {
				if err := r.ep.Ctl("gro off"); err != nil {
					t.Fatal(err)
				}
			}, segs: []tcpSeg{seg(0, ack), seg(1, ack), seg(2, ack)}},
			{name: "no rx checksum offload", prep: func(_ *testing.T, r *groRig) {
				f := r.n.Features()
				f.RxChecksum = false
				r.n.setFeatures(f)
			}, segs: []tcpSeg{seg(0, ack), seg(1, ack), seg(2, ack)}},
		} {
			t.Run(fmt.Sprintf("%s/v6=%v", tc.name, v6), func(t *testing.T) {
				r := newGRORig(t, v6, tc.opt)
				if tc.prep != nil {
					tc.prep(t, r)
				}
				sent := r.send(tc.segs...)
				got := r.poll(t)
				if len(got) != len(sent) {
					t.Fatalf("%d frames went up as %d packets", len(sent), len(got))
				}
				for i := range sent {
					if !bytes.Equal(got[i], sent[i]) {
						t.Errorf("packet %d changed on its way up", i)
					}
				}
				if d := stat(t, r.ep, "rx_delivered"); d != uint64(len(sent)) {
					t.Errorf("rx_delivered %d, want %d", d, len(sent))
				}
			})
		}
	}
}

// A frame shorter than Ethernet's 60-byte minimum arrives padded (a
// sender's zero-window probe of one byte is 55 bytes, padded with 5
// zeros), and the padding is no part of the datagram. It must not reach
// TCP as data: GRO took a segment's length from the frame, so a probe
// merged behind full segments carried its padding into the stream, and
// the sender's next segment, overlapping it, was trimmed: zeros in place
// of data, the stream's length unchanged. It is trimmed to the length
// the IP header gives, with or without GRO, and also behind a frame's
// CRC (4 more bytes where the device leaves it on).
func TestPaddedFrameCarriesNoPadding(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v6    bool
		opt   netstack.Options
		probe int // payload bytes of the short segment
		crc   int // bytes after the padding
	}{
		{name: "gro/probe of 1 byte", probe: 1},
		{name: "gro/4 bytes", probe: 4},
		{name: "gro/1 byte and a crc", probe: 1, crc: 4},
		{name: "no gro/probe of 1 byte", opt: netstack.Options{NoGRO: true}, probe: 1},
		// IPv6's header alone fills the minimum: only a CRC follows.
		{name: "v6/gro/1 byte and a crc", v6: true, probe: 1, crc: 4},
		{name: "v6/no gro/1 byte and a crc", v6: true, opt: netstack.Options{NoGRO: true}, probe: 1, crc: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newGRORig(t, tc.v6, tc.opt)
			const n, mss = 4, 1000
			var want []byte
			for i := range n {
				d := payload(i, mss)
				r.send(tcpSeg{seq: 100 + uint32(i*mss), flags: header.TCPFlagAck, data: d})
				want = append(want, d...)
			}
			d := payload(n, tc.probe)
			f := tcpFrame([6]byte{2, 0, 0, 0, 0, 9}, r.n.MAC(), r.src, r.dst, tcpSeg{seq: 100 + n*mss, flags: header.TCPFlagAck, data: d})
			want = append(want, d...)
			tail := max(header.EthernetMinimumSize+46-len(f), 0) + tc.crc
			if tail == 0 {
				t.Fatalf("a %d-byte frame needs no padding", len(f))
			}
			r.n.inject(append(f, make([]byte, tail)...))
			ipLen := header.IPv4MinimumSize
			if tc.v6 {
				ipLen = header.IPv6MinimumSize
			}
			var got []byte
			for _, p := range r.poll(t) {
				if tc.v6 && int(header.IPv6(p).PayloadLength())+ipLen != len(p) || !tc.v6 && int(header.IPv4(p).TotalLength()) != len(p) {
					t.Errorf("a %d-byte packet whose IP header says otherwise", len(p))
				}
				got = append(got, header.TCP(p[ipLen:]).Payload()...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the stack got %d payload bytes, want the %d sent; the last: % x", len(got), len(want), got[max(len(got)-8, 0):])
			}
			if v := stat(t, r.ep, "rx_trimmed"); v != 1 {
				t.Errorf("rx_trimmed %d, want 1", v)
			}
		})
	}
}

// Other protocols between the segments of a flow pass untouched, and the
// flow is still merged around them.
func TestGROMixedTraffic(t *testing.T) {
	r := newGRORig(t, false, netstack.Options{})
	const mss = 800
	var want []byte
	var frames [][]byte
	udp := udpFrame([6]byte{2, 0, 0, 0, 0, 9}, r.n.MAC(), r.src, r.dst, 9, []byte("not tcp"), false)
	for i := range 4 {
		d := payload(i, mss)
		want = append(want, d...)
		frames = append(frames, tcpFrame([6]byte{2, 0, 0, 0, 0, 9}, r.n.MAC(), r.src, r.dst, tcpSeg{seq: uint32(1000 + i*mss), flags: header.TCPFlagAck, data: d}))
		frames = append(frames, udp)
	}
	for _, f := range frames {
		r.n.inject(f)
	}
	got := r.poll(t)
	var udps, tcps int
	for _, p := range got {
		switch header.IPv4(p).TransportProtocol() {
		case header.UDPProtocolNumber:
			udps++
			if !bytes.Equal(p, udp[header.EthernetMinimumSize:]) {
				t.Errorf("UDP datagram changed on its way up")
			}
		case header.TCPProtocolNumber:
			tcps++
			if pl := header.TCP(p[header.IPv4MinimumSize:]).Payload(); !bytes.Equal(pl, want) {
				t.Errorf("merged payload of %d bytes differs from the %d sent", len(pl), len(want))
			}
		}
	}
	if udps != 4 || tcps != 1 {
		t.Errorf("went up: %d UDP, %d TCP packets; want 4 and 1", udps, tcps)
	}
}

func TestGROCtl(t *testing.T) {
	r := newGRORig(t, false, netstack.Options{})
	if !r.ep.GRO() || !strings.HasPrefix(r.ep.CtlState(), "gro on\n") {
		t.Fatalf("GRO not on by default: %q", r.ep.CtlState())
	}
	for _, bad := range []string{"gro", "gro maybe", "gro on off"} {
		if err := r.ep.Ctl(bad); err == nil {
			t.Errorf("ctl %q accepted", bad)
		}
	}
	if !r.ep.GRO() {
		t.Errorf("a refused ctl turned GRO off")
	}
	if err := r.ep.Ctl("gro off"); err != nil || r.ep.GRO() || !strings.HasPrefix(r.ep.CtlState(), "gro off\n") {
		t.Errorf("gro off: %v, state %q", err, r.ep.CtlState())
	}
	if err := r.ep.Ctl("gro on"); err != nil || !r.ep.GRO() {
		t.Errorf("gro on: %v", err)
	}
	// Other words are the driver's.
	if err := r.ep.Ctl("mtu 1500"); err == nil {
		t.Errorf("a word the fake driver does not know was accepted")
	}
}

// A TCP transfer each way over GRO arrives byte-exact (SHA-256), and the
// stack was handed fewer packets than the frames received.
func TestGROTransferTCP(t *testing.T) {
	for _, dst := range []netip.Addr{addrB.Addr(), addrB6.Addr()} {
		t.Run(dst.String(), func(t *testing.T) {
			p := newFakePair(t, netstack.Options{})
			transferTCP(t, p.sa, p.sb, dst, 4<<20, nil)
			ep := p.sb.Endpoints[0]
			frames, up := stat(t, ep, "rx_packets"), stat(t, ep, "rx_delivered")
			if stat(t, ep, "rx_gro") == 0 || up >= frames {
				t.Errorf("receiver: %d frames, %d packets up, %d through GRO: nothing coalesced", frames, up, stat(t, ep, "rx_gro"))
			}
			t.Logf("%d frames went up as %d packets", frames, up)
		})
	}
}
