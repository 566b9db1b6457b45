package e1000e_test

import (
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/iommu"
)

// BenchmarkRxClean measures the driver's RX path per buffer, the seed
// patch's figure: the ring is filled by the model with the timer stopped,
// then one timed Poll cleans it (copy or hand-off, refill, re-arm). The
// frames are released outside the timed section too, as the stack would
// release them later.
func BenchmarkRxClean(b *testing.B) {
	for _, mode := range []string{"unmap", "sync"} {
		for _, mmu := range []string{"off", "strict", "deferred"} {
			for _, cb := range []int{0, 256, 2048} {
				for _, size := range []int{64, 1514} {
					name := fmt.Sprintf("mode=%s/iommu=%s/cb=%d/size=%d", mode, mmu, cb, size)
					b.Run(name, func(b *testing.B) { benchRx(b, mode, mmu, cb, size) })
				}
			}
		}
	}
}

func benchRx(b *testing.B, mode, mmu string, cb, size int) {
	mc := newMachine(b, rigOpt{passthrough: mmu == "off"})
	defer mc.NIC.Close()
	if mmu == "deferred" {
		if err := mc.Unit.SetMode(iommu.Deferred, 64); err != nil {
			b.Fatal(err)
		}
	}
	mc.NIC.Ctl("copybreak-mode " + mode)
	mc.NIC.Ctl(fmt.Sprintf("copybreak %d", cb))
	frame := mc.frame(size, 1)
	const batch = 128
	got := make([]*nic.RxPacket, 0, batch)
	deliver := func(p *nic.RxPacket) { got = append(got, p) }
	var rxb nictest.Batch
	st0 := mc.IOMMUStats()
	frames := 0
	b.ResetTimer()
	b.StopTimer()
	for frames < b.N {
		for i := 0; i < batch; i++ {
			mc.wire.B().Send(frame)
		}
		b.StartTimer()
		n := rxb.Receive(mc.q, batch, deliver)
		b.StopTimer()
		if n != batch {
			b.Fatalf("polled %d of %d", n, batch)
		}
		for _, p := range got {
			p.Data.Release()
		}
		got = got[:0]
		frames += batch
	}
	st := mc.IOMMUStats()
	per := func(v uint64) float64 { return float64(v) * 1000 / float64(frames) }
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(frames), "ns/buffer")
	b.ReportMetric(per(st.Maps-st0.Maps), "maps/1k")
	b.ReportMetric(per(st.Unmaps-st0.Unmaps), "unmaps/1k")
	b.ReportMetric(per(st.Invalidations()-st0.Invalidations()), "inv/1k")
}
