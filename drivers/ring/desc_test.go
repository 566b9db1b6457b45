package ring

import (
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
)

// regWrites records register writes in order.
type regWrites [][2]uint32

func (w *regWrites) Read32(off uint32) uint32     { return 0 }
func (w *regWrites) Write32(off uint32, v uint32) { *w = append(*w, [2]uint32{off, v}) }
func (w *regWrites) Read64(off uint32) uint64     { return 0 }
func (w *regWrites) Write64(off uint32, v uint64) {}

func TestDescsProgram(t *testing.T) {
	d, err := NewDescs(fakedev.NewDMA(), 64, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free()
	var w regWrites
	d.Program(&w, 0xe040) // TDBAL of queue 1 on the 82576 and I225
	a := uint64(d.Addr())
	want := regWrites{{0xe040, uint32(a)}, {0xe044, uint32(a >> 32)}, {0xe048, 1024}, {0xe050, 0}, {0xe058, 0}}
	if len(w) != len(want) {
		t.Fatalf("writes %x, want %x", w, want)
	}
	for i := range w {
		if w[i] != want[i] {
			t.Errorf("write %d = %#x, want %#x", i, w[i], want[i])
		}
	}
}
