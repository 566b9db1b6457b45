package e1000e

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
)

// BenchmarkPollDriverOnly measures the driver's own RX cost per buffer:
// write-backs are written straight into the ring by the benchmark and the
// fake DMA's syncs are cheap, so neither a device model nor an IOMMU is
// in the timed section.
func BenchmarkPollDriverOnly(b *testing.B) {
	for _, cb := range []int{0, 256} {
		for _, size := range []int{64, 1514} {
			b.Run(fmt.Sprintf("cb=%d/size=%d", cb, size), func(b *testing.B) {
				r := newRig(b, 0x10D3)
				defer r.d.Close()
				r.d.Ctl(fmt.Sprintf("copybreak %d", cb))
				const batch = 128
				rx := r.d.q.rx
				deliver := func(p *nic.RxPacket) { p.Data.Release() }
				var rxb nictest.Batch
				b.ResetTimer()
				for done := 0; done < b.N; done += batch {
					b.StopTimer()
					for k, i := 0, rx.Clean(); k < batch; k, i = k+1, rx.Descs.Next(i) {
						d := rx.Descs.At(i)
						binary.LittleEndian.PutUint32(d[8:], RXD_STAT_DD|RXD_STAT_EOP)
						binary.LittleEndian.PutUint16(d[12:], uint16(size))
					}
					b.StartTimer()
					rxb.Receive(&r.d.q, batch, deliver)
				}
			})
		}
	}
}
