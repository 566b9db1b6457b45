package testhost

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
)

// A frame's span of a shared chunk: where it starts and its length.
type chunkSpan struct{ off, n int }

// sharedTxSpans are frames cut from one chunk as the stack cuts them:
// the same start with two lengths (a segment sent, then part of it sent
// again while the first is in flight), and frames overlapping each
// other's tails. A driver that maps frames of this size maps them all.
var sharedTxSpans = []chunkSpan{{0, 1400}, {0, 1000}, {600, 1400}, {1000, 1500}, {0, 1400}}

// CheckTxSharedChunk sends, in one batch, frames whose data are views of
// one gVisor chunk that overlap, so that a driver that maps them has all
// of them mapped for the device at once (the drivers today copy frames
// of this size); peer must receive each, in order, with its own bytes.
// Memory has one physical address however often it is mapped: a driver,
// a DMA layer or a simulated memory that refuses a second mapping of
// bytes already mapped drops the frame, and TCP, which sends the same
// bytes again from the same chunk, then stalls for good.
func CheckTxSharedChunk(t testing.TB, q nic.Queue, peer *Peer) {
	t.Helper()
	peer.Reset()
	data := make([]byte, 4096)
	rand.Read(data)
	chunk := buffer.NewViewWithData(data)
	defer chunk.Release()
	var pkts []*nic.TxPacket
	for _, s := range sharedTxSpans {
		v := chunk.Clone()
		v.TrimFront(s.off)
		v.CapLength(s.n)
		pkts = append(pkts, &nic.TxPacket{Data: buffer.MakeWithView(v)})
	}
	if n, err := q.Transmit(pkts); n != len(pkts) || err != nil {
		t.Fatalf("transmit %d frames sharing a chunk: took %d, %v", len(pkts), n, err)
	}
	const maxTouches = 10000 // each reclaim lets a deferring model go on
	touches := 0
	for ; peer.Len() < len(pkts) && touches < maxTouches; touches++ {
		q.Reclaim()
	}
	q.Reclaim()
	frames := peer.Frames()
	if len(frames) != len(pkts) {
		t.Fatalf("%d of %d frames sharing a chunk on the wire after %d reclaims", len(frames), len(pkts), touches)
	}
	for i, s := range sharedTxSpans {
		if !bytes.Equal(frames[i], data[s.off:s.off+s.n]) {
			t.Errorf("frame %d (bytes %d..%d of the chunk): %d bytes on the wire, not the chunk's", i, s.off, s.off+s.n, len(frames[i]))
		}
	}
}
