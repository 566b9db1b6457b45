package main

import (
	"testing"
	"time"
)

// BenchmarkBuildSkb times one rig at a time, for profiling a single layout
// and path: go test -bench BuildSkb/driver/build -cpuprofile cpu.out.
func BenchmarkBuildSkb(b *testing.B) {
	for _, path := range []bsPath{toRelease, toDispatcher, toSocket} {
		for _, v := range bsVariants {
			b.Run(path.String()+"/"+v.name, func(b *testing.B) {
				r, err := newBsRig(path, v, 60, "strict")
				if err != nil {
					b.Fatal(err)
				}
				defer r.close()
				const batch = 64
				for i := 0; i < 8; i++ {
					if _, err := r.round(batch); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				var el time.Duration
				frames := 0
				for ; frames < b.N; frames += batch {
					d, err := r.round(batch)
					if err != nil {
						b.Fatal(err)
					}
					el += d
				}
				b.ReportMetric(float64(el.Nanoseconds())/float64(frames), "ns/frame")
				b.ReportMetric(float64(frames)/el.Seconds()/1e6, "Mpps")
			})
		}
	}
}
