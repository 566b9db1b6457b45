package ring

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
)

// The test DMA counts faults as a domain does (drivers/nic's capability
// list).
var _ FaultCounter = (*fakedev.DMA)(nil)

// The guard drops every frame of a poll the fault count moved in, keeps
// a fault seen by an empty poll for the next frames, and passes frames
// once the count is spent.
func TestFaultGuard(t *testing.T) {
	dma := fakedev.NewDMA()
	dma.Fault() // before the guard: counts for nothing
	var logged int
	g := NewFaultGuard(dma, "ether0 q0", func(string, ...any) { logged++ })
	var st RxStats
	batch := func(k int) []nic.RxPacket {
		pkts := make([]nic.RxPacket, k)
		for i := range pkts {
			pkts[i].Data = buffer.MakeWithData([]byte{byte(i)})
		}
		return pkts
	}
	steps := []struct {
		name   string
		faults int // faults the device takes before the poll is judged
		frames int
		want   int
	}{
		{"no fault", 0, 3, 3},
		{"fault, frames", 1, 2, 0},
		{"spent", 0, 2, 2},
		{"fault, empty poll", 1, 0, 0},
		{"pending fault, frames", 0, 4, 0},
		{"spent again", 0, 1, 1},
	}
	drops := uint64(0)
	for _, s := range steps {
		for range s.faults {
			dma.Fault()
		}
		pkts := batch(s.frames)
		if got := g.Check(pkts, &st); got != s.want {
			t.Fatalf("%s: %d of %d frames kept, want %d", s.name, got, s.frames, s.want)
		}
		if s.want == 0 {
			drops += uint64(s.frames)
			for i, p := range pkts {
				if p.Data.Size() != 0 {
					t.Errorf("%s: dropped frame %d still holds %d bytes", s.name, i, p.Data.Size())
				}
			}
		}
		if n := st.Drops[DropDMA].Load(); n != drops {
			t.Fatalf("%s: rx_drop_dma %d, want %d", s.name, n, drops)
		}
	}
	if logged != 2 {
		t.Errorf("%d drops logged, want 2", logged)
	}
	// A count lowered by the caller (faults another path took as its
	// own) is the new base, not a fault.
	if got := g.Judge(g.faults-1, batch(2), &st); got != 2 {
		t.Errorf("lowered count: %d of 2 frames kept", got)
	}
}

// Without a fault counter on the view every frame passes.
func TestFaultGuardNoCounter(t *testing.T) {
	g := NewFaultGuard(nil, "ether0", nil)
	pkts := make([]nic.RxPacket, 3)
	if got := g.Check(pkts, &RxStats{}); got != 3 {
		t.Errorf("%d of 3 frames kept", got)
	}
}
