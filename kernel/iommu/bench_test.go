package iommu

import (
	"testing"
)

// BenchmarkMapUnmap4K maps and unmaps one 4 KiB buffer per iteration on
// the simulated machine (QEMU's unit, each invalidation costing the model's
// 1 µs), in strict and in deferred mode.
func BenchmarkMapUnmap4K(b *testing.B) {
	for _, m := range []Mode{Strict, Deferred} {
		b.Run(m.String(), func(b *testing.B) {
			r := qemuRig(b)
			if err := r.u.SetMode(m, 0); err != nil {
				b.Fatal(err)
			}
			d := r.domain(devA)
			before := r.u.Stats()
			b.ResetTimer()
			mapUnmapLoop(b, d, b.N)
			b.StopTimer()
			s := r.u.Stats()
			unmaps := s.Unmaps - before.Unmaps
			b.ReportMetric(float64(s.Invalidations()-before.Invalidations())*1000/float64(unmaps), "invalidations/1000unmaps")
		})
	}
}
