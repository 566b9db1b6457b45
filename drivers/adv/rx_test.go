package adv

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
)

// writeBack fills descriptor i as the device completes it.
func writeBack(descs *ring.Descs, i int, stat uint32, n int) {
	d := descs.At(i)
	binary.LittleEndian.PutUint32(d[8:], stat)
	binary.LittleEndian.PutUint16(d[12:], uint16(n))
}

func TestCleanRxAdvanced(t *testing.T) {
	descs, err := ring.NewDescs(fakedev.NewDMA(), 8, Size)
	if err != nil {
		t.Fatal(err)
	}
	defer descs.Free()
	c := ring.NewCursor(8)
	c.Refill(func(int) (kernel.DMAAddr, error) { return 0, nil }, func(int, kernel.DMAAddr) {})
	const dd, eop = RXD_STAT_DD, RXD_STAT_EOP
	// good, errored, a frame over two buffers, good, then one not done.
	writeBack(descs, 0, dd|eop, 60)
	writeBack(descs, 1, dd|eop|RXDEXT_ERR_CE, 61)
	writeBack(descs, 2, dd, 2048)
	writeBack(descs, 3, dd|eop, 100)
	writeBack(descs, 4, dd|eop, 62)

	var got []string
	drop := func(r ring.DropReason) { got = append(got, fmt.Sprintf("drop%d@%d", r, c.Clean())) }
	frame := func(d []byte) { got = append(got, fmt.Sprintf("frame%d@%d", DecodeRx(d).Length, c.Clean())) }
	discard := false
	if n := ring.CleanRx(descs, &c, FrameErrors, 3, &discard, drop, frame); n != 3 || !discard {
		t.Fatalf("first poll took %d, discard %v; want 3 and inside a frame", n, discard)
	}
	if n := ring.CleanRx(descs, &c, FrameErrors, 8, &discard, drop, frame); n != 2 || discard {
		t.Fatalf("second poll took %d, discard %v; want 2, frame ended", n, discard)
	}
	want := fmt.Sprint([]string{
		"frame60@0", fmt.Sprintf("drop%d@1", ring.DropErrorBits), fmt.Sprintf("drop%d@2", ring.DropMulti),
		fmt.Sprintf("drop%d@3", ring.DropMulti), "frame62@4",
	})
	if fmt.Sprint(got) != want {
		t.Fatalf("loop saw %v, want %v", got, want)
	}
	for i := 0; i < 5; i++ {
		if RxDone(descs.At(i)) {
			t.Errorf("descriptor %d still shows DD after cleaning", i)
		}
	}
	if c.Clean() != 5 || c.Armed() != 2 {
		t.Errorf("cursor at %d with %d armed, want 5 and 2", c.Clean(), c.Armed())
	}
}
