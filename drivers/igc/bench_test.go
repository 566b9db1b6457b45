package igc

import (
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/advplay"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"gvisor.dev/gvisor/pkg/buffer"
)

// BenchmarkRxLayout measures the driver's own RX cost per 64-byte frame
// with each layout over untranslated simulated memory, the test playing
// the device between polls and only the polls timed, each packet released
// at once, offered back first as the endpoint does: no stack, so no
// header pull-up and no copy-on-write of a shared page (tools/bench
// buildskb measures with the stack).
func BenchmarkRxLayout(b *testing.B) {
	for _, policy := range []string{"auto", "off"} {
		name := map[string]string{"auto": "build", "off": "construct"}[policy]
		b.Run(name, func(b *testing.B) {
			mem := sim.NewMemory()
			r := newRigOn(b, iommu.Passthrough(mem), advplay.PhysMem{M: mem})
			defer r.Close(b)
			if err := r.d.Ctl("build " + policy); err != nil {
				b.Fatal(err)
			}
			r.RestartRx(0)
			f := udpFrame(60, 1)
			q := r.d.queues[0]
			release := func(p *nic.RxPacket) { // as the endpoint does once the stack is done
				if p.Recycle != nil {
					vl := p.Data.AsViewList()
					p.Recycle(vl.Front())
				}
				p.Data.Release()
			}
			var rxb nictest.Batch
			const batch = 64
			poll := func() time.Duration {
				for i := 0; i < batch; i++ {
					r.Deliver(b, 0, f, adv.RXD_STAT_EOP, rssHash)
				}
				start := time.Now()
				if n := rxb.Receive(q, batch, release); n != batch {
					b.Fatalf("poll took %d of %d", n, batch)
				}
				return time.Since(start)
			}
			for i := 0; i < 8; i++ {
				poll()
			}
			b.ResetTimer()
			var el time.Duration
			frames := 0
			for ; frames < b.N; frames += batch {
				el += poll()
			}
			b.ReportMetric(float64(el.Nanoseconds())/float64(frames), "ns/frame")
		})
	}
}

// BenchmarkRxBufferTurnover is what each layout pays gVisor's buffer
// package per frame to have a buffer again: build from the pool (a 2 KiB
// chunk, cleared on the way out), build taking a released chunk back
// (a second reference, the packet's dropped, the view reset), and
// construct's 64-byte head (a small chunk, cleared, the frame copied).
func BenchmarkRxBufferTurnover(b *testing.B) {
	frame := udpFrame(60, 1)
	b.Run("build-pool", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			buffer.NewViewSize(rxBufLen).Release()
		}
	})
	b.Run("build-returned", func(b *testing.B) {
		v := buffer.NewViewSize(rxBufLen)
		for i := 0; i < b.N; i++ {
			own := v.Clone()
			v.Release()
			own.Reset()
			own.Grow(rxBufLen)
			v = own
		}
		v.Release()
	})
	b.Run("construct-head", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			buffer.NewViewWithData(frame).Release()
		}
	})
}
