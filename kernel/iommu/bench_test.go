package iommu

import (
	"fmt"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
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

// BenchmarkSyncForCPU syncs the received part of one buffer of a 256-entry
// ring of 2 KiB receive buffers per iteration, walking the ring as a
// driver's RX clean does: for the first 64 bytes (a small frame) and for
// the whole 2 KiB, behind the unit in strict and deferred mode and with
// translation off, on coherent and non-coherent memory.
func BenchmarkSyncForCPU(b *testing.B) {
	const ring, bufSize = 256, 2048
	for _, mmu := range []string{"strict", "deferred", "off"} {
		for _, coherent := range []bool{true, false} {
			for _, n := range []int{64, bufSize} {
				mem := "coherent"
				if !coherent {
					mem = "noncoherent"
				}
				b.Run(fmt.Sprintf("%s/%s/%dB", mmu, mem, n), func(b *testing.B) {
					r := newRig(b, sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: !coherent}, Options{})
					var dma kernel.DMA = Passthrough(r.m.Mem)
					if mmu != "off" {
						m := Strict
						if mmu == "deferred" {
							m = Deferred
						}
						if err := r.u.SetMode(m, 0); err != nil {
							b.Fatal(err)
						}
						dma = r.domain(devA)
					}
					addrs := make([]kernel.DMAAddr, ring)
					for i := range addrs {
						a, err := dma.Map(make([]byte, bufSize), kernel.FromDevice)
						if err != nil {
							b.Fatal(err)
						}
						addrs[i] = a
					}
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if err := dma.SyncForCPU(addrs[i%ring], n, kernel.FromDevice); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
