package vtd

import "testing"

func benchUnit(b *testing.B, cfg Config) (*Unit, uint16) {
	tb := newTables(b)
	cfg.InvalidationCost = -1
	u, err := New(cfg, tb.mem)
	if err != nil {
		b.Fatal(err)
	}
	src := sid(0, 3, 0)
	top := tb.context(src, 1, 4)
	for i := range uint64(256) {
		tb.mapAt(top, 4, i<<12, 0x100_0000+i<<12, 1, rw)
	}
	u.Write64(RTADDR, tb.root)
	u.Write32(GCMD, GCMD_SRTP)
	u.Write32(GCMD, GCMD_TE)
	return u, src
}

// BenchmarkTranslate measures one translation with the IOTLB hitting and
// with every request walking four levels.
func BenchmarkTranslate(b *testing.B) {
	for _, c := range []struct {
		name  string
		iotlb bool
	}{{"iotlb", true}, {"walk", false}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := QEMU()
			cfg.IOTLB = c.iotlb
			u, src := benchUnit(b, cfg)
			var i uint64
			for b.Loop() {
				if _, err := u.Translate(src, (i%256)<<12, true); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkPageInvalidation measures a register-based page-selective
// invalidation including the configured hardware cost (1 µs by default).
func BenchmarkPageInvalidation(b *testing.B) {
	for _, c := range []struct {
		name string
		cost int
	}{{"free", -1}, {"default", 0}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := QEMU()
			tb := newTables(b)
			cfg.InvalidationCost = 0
			if c.cost < 0 {
				cfg.InvalidationCost = -1
			}
			u, err := New(cfg, tb.mem)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				pageInval(u, 1, 0x1000, 0, false)
			}
		})
	}
}
