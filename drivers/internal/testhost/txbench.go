package testhost

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/sim/wire"
	"gvisor.dev/gvisor/pkg/buffer"
)

// txBenchBatch is the packets one Transmit call gets, as the netstack's
// queue hands them over.
const txBenchBatch = 32

// BenchTx times the transmit path of n's first queue on a simulated
// machine whose wire's far end is peer: batches of frames of 60 and 1514
// bytes in two views (headers and payload, as the stack builds them),
// and GSO packets of 64,000 payload bytes with TSO on (tso is the Ctl
// that turns it on), each packet sent and reclaimed. Besides the time per
// packet it reports the NIC's tx_maps per packet.
func BenchTx(b *testing.B, n nic.NIC, peer *wire.End, tso string) {
	var frames atomic.Int64
	peer.Receive(func([]byte) { frames.Add(1) })
	q := n.Queues()[0]
	if err := n.Ctl(tso); err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{60, 1514} {
		b.Run(fmt.Sprintf("frame%d", size), func(b *testing.B) {
			f := UDPFrame([6]byte{2, 0, 0, 0, 0, 2}, 9, size, 1)
			benchTx(b, n, q, &frames, 1, func() *nic.TxPacket {
				d := buffer.MakeWithView(buffer.NewViewWithData(f[:42]))
				d.Append(buffer.NewViewWithData(f[42:]))
				return &nic.TxPacket{Data: d}
			})
		})
	}
	b.Run("tso64000", func(b *testing.B) {
		p, _, _ := nictest.GSOPacket(false, 1, 64000)
		defer p.Data.Release()
		benchTx(b, n, q, &frames, (64000+nictest.GSOMSS(false)-1)/nictest.GSOMSS(false), func() *nic.TxPacket {
			c := *p
			c.Data = p.Data.Clone()
			return &c
		})
	})
}

// benchTx sends b.N packets from next in batches, each of segs frames on
// the wire, and waits until all reached it.
func benchTx(b *testing.B, n nic.NIC, q nic.Queue, frames *atomic.Int64, segs int, next func() *nic.TxPacket) {
	maps := nictest.Stat(b, n.Stats(), "tx_maps")
	start := frames.Load()
	batch := make([]*nic.TxPacket, 0, txBenchBatch)
	b.ReportAllocs()
	b.ResetTimer()
	for sent, idle := 0, 0; sent < b.N; {
		batch = batch[:0]
		for i := sent; i < min(sent+txBenchBatch, b.N); i++ {
			batch = append(batch, next())
		}
		took, err := q.Transmit(batch)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range batch[took:] {
			p.Data.Release()
		}
		sent += took
		if q.Reclaim() == 0 && took == 0 {
			if idle++; idle > maxIdle {
				b.Fatalf("ring full for good: %d of %d packets taken, %d frames on the wire", sent, b.N, frames.Load()-start)
			}
			q.Wait(0)
		} else {
			idle = 0
		}
	}
	want := start + int64(b.N*segs)
	for idle := 0; frames.Load() < want; idle++ {
		if idle > maxIdle {
			b.Fatalf("%d of %d frames on the wire", frames.Load()-start, want-start)
		}
		if q.Reclaim() == 0 {
			q.Wait(0)
		}
	}
	b.StopTimer()
	q.Reclaim()
	b.ReportMetric(float64(nictest.Stat(b, n.Stats(), "tx_maps")-maps)/float64(b.N), "maps/pkt")
}
