package iommu

import (
	"errors"
	"testing"

	"github.com/ether9/ether9/kernel"
)

func TestCheckSegments(t *testing.T) {
	type segs = []kernel.Segment
	seg := func(p kernel.PhysAddr, n int) kernel.Segment { return kernel.Segment{Phys: p, Len: n} }
	for _, c := range []struct {
		name string
		segs segs
		size int
		want error
	}{
		{"one", segs{seg(0x1234, 100)}, 100, nil},
		{"pages apart", segs{seg(0x1800, 0x800), seg(0x9000, 0x1000), seg(0x3000, 10)}, 0x1800 + 10, nil},
		{"none", nil, 0, kernel.ErrBadAddress},
		{"empty segment", segs{seg(0x1000, 0)}, 0, kernel.ErrBadAddress},
		{"second starts inside a page", segs{seg(0x1000, 0x1000), seg(0x5008, 8)}, 0x1008, kernel.ErrUnaligned},
		{"first ends inside a page", segs{seg(0x1000, 0x800), seg(0x5000, 8)}, 0x808, kernel.ErrUnaligned},
		{"short", segs{seg(0x1000, 0x100)}, 0x200, kernel.ErrBadAddress},
		{"beyond 52 bits", segs{seg(1<<52-0x800, 0x1000)}, 0x1000, kernel.ErrBadAddress},
	} {
		err := checkSegments(c.segs, c.size)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
