package netstack_test

import (
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// replayQueue hands out the same frame, as fresh buffers, as fast as it is
// polled: the endpoint's own RX cost with no device behind it.
type replayQueue struct{ frame []byte }

func (q *replayQueue) Receive(pkts []nic.RxPacket) (int, int) {
	for i := range pkts {
		pkts[i] = nic.RxPacket{Data: buffer.MakeWithData(q.frame), CsumOK: true}
	}
	return len(pkts), len(pkts)
}
func (q *replayQueue) Transmit(p []*nic.TxPacket) (int, error) { return 0, nil }
func (q *replayQueue) Reclaim() int                            { return 0 }
func (q *replayQueue) Wait(time.Duration) bool                 { return false }

type replayNIC struct {
	*fakeNIC
	q *replayQueue
}

func (n replayNIC) Queues() []nic.Queue { return []nic.Queue{n.q} }

// BenchmarkEndpointRx is the endpoint's share of the RX path per frame:
// packet buffer around the frame, Ethernet header, hand-over, release (and
// the copy into a fresh buffer that stands in for the driver).
func BenchmarkEndpointRx(b *testing.B) {
	for _, size := range []int{60, 1514} {
		b.Run(map[int]string{60: "64B", 1514: "1514B"}[size], func(b *testing.B) {
			f := newFakeNIC("ether0", 1)
			frame := udpFrame([6]byte{2, 0, 0, 0, 0, 9}, f.MAC(), addrB.Addr(), addrA.Addr(), 9, make([]byte, size-42), false)
			ep, err := netstack.New(replayNIC{f, &replayQueue{frame}}, netstack.Options{Manual: true})
			if err != nil {
				b.Fatal(err)
			}
			defer ep.Close()
			var d countingDispatcher
			ep.Attach(&d)
			b.ResetTimer()
			for i := 0; i < b.N; i += 64 {
				ep.Poll(0, 64)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(d.frames), "ns/frame")
		})
	}
}

// streamQueue hands out the full-sized, in-order segments of one TCP flow
// as fast as it is polled, each in a fresh buffer.
type streamQueue struct {
	replayQueue
	src, dst [6]byte
	seq      uint32
	data     []byte
}

func (q *streamQueue) Receive(pkts []nic.RxPacket) (int, int) {
	for i := range pkts {
		f := tcpFrame(q.src, q.dst, addrB.Addr(), addrA.Addr(), tcpSeg{seq: q.seq, flags: header.TCPFlagAck, data: q.data})
		q.seq += uint32(len(q.data))
		pkts[i] = nic.RxPacket{Data: buffer.MakeWithData(f), CsumOK: true}
	}
	return len(pkts), len(pkts)
}

type streamNIC struct {
	*fakeNIC
	q *streamQueue
}

func (n streamNIC) Queues() []nic.Queue { return []nic.Queue{n.q} }

// BenchmarkEndpointRxTCP is a bulk TCP stream's receive path through the
// endpoint, with and without coalescing: the cost per frame and how many
// packets the stack is handed per frame (what TCP then processes). The
// time includes building each frame, which stands in for the driver.
func BenchmarkEndpointRxTCP(b *testing.B) {
	for _, noGRO := range []bool{false, true} {
		b.Run(map[bool]string{false: "gro", true: "nogro"}[noGRO], func(b *testing.B) {
			f := newFakeNIC("ether0", 1)
			q := &streamQueue{src: [6]byte{2, 0, 0, 0, 0, 9}, dst: f.MAC(), data: make([]byte, 1448)}
			ep, err := netstack.New(streamNIC{f, q}, netstack.Options{Manual: true, NoGRO: noGRO})
			if err != nil {
				b.Fatal(err)
			}
			defer ep.Close()
			var d countingDispatcher
			ep.Attach(&d)
			b.ResetTimer()
			frames := 0
			for frames < b.N {
				n, _ := ep.Poll(0, 64)
				frames += n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(frames), "ns/frame")
			b.ReportMetric(float64(d.frames)/float64(frames), "up/frame")
		})
	}
}

// BenchmarkEndpointRxCapture is BenchmarkEndpointRx at 64 B with the
// interface's capture on and one reader draining the pcap stream: what
// a capture costs the receive path per frame (the frame's copy into the
// ring, the timestamp, the reader's wake-up), and the frames the reader
// lost.
func BenchmarkEndpointRxCapture(b *testing.B) {
	f := newFakeNIC("ether0", 1)
	frame := udpFrame([6]byte{2, 0, 0, 0, 0, 9}, f.MAC(), addrB.Addr(), addrA.Addr(), 9, make([]byte, 60-42), false)
	ep, err := netstack.New(replayNIC{f, &replayQueue{frame}}, netstack.Options{Manual: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ep.Close()
	if err := ep.Ctl("capture on"); err != nil {
		b.Fatal(err)
	}
	r, err := ep.Capture().Open(netip.AddrPort{}, netip.AddrPort{})
	if err != nil {
		b.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.Copy(io.Discard, r)
	}()
	var d countingDispatcher
	ep.Attach(&d)
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		ep.Poll(0, 64)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(d.frames), "ns/frame")
	b.ReportMetric(float64(r.Dropped())/float64(d.frames), "lost/frame")
	r.Close()
	<-drained
}
