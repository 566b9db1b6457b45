package ring

import (
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/kernel"
)

func TestBreakEven(t *testing.T) {
	ns := func(v int) time.Duration { return time.Duration(v) }
	// Copy costs 100 ns plus 1 ns a byte.
	line := []SizeCost{{64, ns(164)}, {256, ns(356)}, {1024, ns(1124)}, {1514, ns(1614)}}
	for _, tc := range []struct {
		name    string
		copies  []SizeCost
		handoff time.Duration
		want    int
	}{
		{"crosses at 500", line, ns(600), 500},
		{"crosses at 0", line, ns(100), 0},
		{"handoff below any copy", line, ns(50), 0},
		{"copy always cheaper", line, ns(5000), 2048},
		{"crosses at the buffer", line, ns(2148), 2048},
		{"flat and dearer", []SizeCost{{64, ns(900)}, {1514, ns(900)}}, ns(800), 0},
		{"flat and cheaper", []SizeCost{{64, ns(900)}, {1514, ns(900)}}, ns(1000), 2048},
		{"nothing measured", nil, ns(1000), 0},
	} {
		if got := breakEven(tc.copies, tc.handoff, 2048); got != tc.want {
			t.Errorf("%s: breakEven = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// slowUnmap is a DMA view whose unmaps cost what a strict IOTLB
// invalidation costs on a slow IOMMU.
type slowUnmap struct {
	*fakedev.DMA
	cost time.Duration
}

func (d slowUnmap) Unmap(a kernel.DMAAddr, n int, dir kernel.Direction) error {
	for start := time.Now(); time.Since(start) < d.cost; {
	}
	return d.DMA.Unmap(a, n, dir)
}

func TestMeasureCopybreak(t *testing.T) {
	dma := fakedev.NewDMA()
	// An unmap dearer than copying a whole buffer, however loaded the
	// machine: every frame is copied.
	c, err := MeasureCopybreak(slowUnmap{dma, 50 * time.Microsecond}, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if c.Copybreak != 2048 || c.Handoff < 50*time.Microsecond {
		t.Errorf("slow unmap: copybreak %d, handoff %v; want 2048 and at least 50us", c.Copybreak, c.Handoff)
	}
	if len(c.Copy) != len(copySizes)+1 || c.Copy[len(c.Copy)-1].Size != 2048 {
		t.Errorf("copy sizes %v", c.Copy)
	}
	for _, s := range c.Copy {
		if s.Cost <= 0 {
			t.Errorf("copying %d bytes cost %v", s.Size, s.Cost)
		}
	}
	if n := dma.Live(); n != 0 {
		t.Errorf("%d mappings left after measuring", n)
	}
	// The handoff batch is mapped once for all its rounds, each round
	// maps a replacement per handoff, and the copies share one buffer.
	if maps, unmaps, _ := dma.Counts(); maps != unmaps || maps != tuneBatch*(tuneRounds+1)+1 {
		t.Errorf("%d maps, %d unmaps; want %d of each", maps, unmaps, tuneBatch*(tuneRounds+1)+1)
	}

	// A map that fails is an error, and leaves nothing mapped.
	dma.FailAllMaps(true)
	if _, err := MeasureCopybreak(dma, 2048); err == nil {
		t.Errorf("failing maps: err %v", err)
	}
	dma.FailAllMaps(false)
	if n := dma.Live(); n != 0 {
		t.Errorf("%d mappings left after a failed measurement", n)
	}
}
