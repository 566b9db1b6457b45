package igb

import (
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/internal/advplay"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/xskapp"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
)

// countingDMA counts streaming maps.
type countingDMA struct {
	kernel.DMA
	maps int
}

func (c *countingDMA) Map(b []byte, dir kernel.Direction) (kernel.DMAAddr, error) {
	c.maps++
	return c.DMA.Map(b, dir)
}

// BenchmarkRxClean measures the driver's RX cost per frame with the test
// playing the device over untranslated DMA on simulated memory: half-page
// handoff to the stack, copybreak, and a zero-copy socket, with streaming
// maps per 1,000 frames (0 in steady state).
func BenchmarkRxClean(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, path := range []string{"handoff", "copybreak", "zero-copy"} {
			b.Run(fmt.Sprintf("%s/%dB", path, size), func(b *testing.B) {
				mem := sim.NewMemory()
				dma := countingDMA{DMA: iommu.Passthrough(mem)}
				r := newRigOn(b, &dma, advplay.PhysMem{M: mem})
				defer r.Close(b)
				q := r.d.queues[0]
				var a *xskapp.App
				switch path {
				case "handoff":
					r.d.Ctl("copybreak 0")
				case "copybreak":
					r.d.Ctl("copybreak 2048")
				case "zero-copy":
					a = xskapp.New(b, 1024, 1024, 256)
					if err := r.d.Bind(0, a.S, xsk.ZeroCopy); err != nil {
						b.Fatal(err)
					}
				}
				f := frame(size, 1)
				release := func(p *nic.RxPacket) { p.Data.Release() }
				var rxb nictest.Batch
				run := func(n int) {
					for i := 0; i < n; {
						k := 0
						for ; k < 32 && i < n; k++ {
							r.Deliver(b, 0, f, RXD_STAT_EOP, 0)
							i++
						}
						rxb.Receive(q, 64, release)
						if a != nil {
							a.Recycle(b)
						}
					}
				}
				run(2 * rxDescs) // every slot armed once
				maps0 := dma.maps
				b.ResetTimer()
				run(b.N)
				b.StopTimer()
				b.ReportMetric(float64(dma.maps-maps0)*1000/float64(b.N), "maps/1000")
				if a != nil {
					r.d.Unbind(0)
				}
			})
		}
	}
}
