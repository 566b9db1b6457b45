package nictest

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/internal/failtest"
	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
)

// fakeNIC answers Stats and Close; nothing else is called.
type fakeNIC struct {
	nic.NIC
	closed bool
}

func (f *fakeNIC) Stats() []nic.Stat { return []nic.Stat{{Name: "rx_frames", Value: 7}} }
func (f *fakeNIC) Close() error      { f.closed = true; return nil }

func TestStat(t *testing.T) {
	u := Unit{NIC: &fakeNIC{}}
	if v := u.Stat(t, "rx_frames"); v != 7 {
		t.Errorf("rx_frames %d, want 7", v)
	}
	if msg := failtest.First(func(tb testing.TB) { u.Stat(tb, "tx_frames") }); msg != `no stat "tx_frames"` {
		t.Errorf("a missing statistic: %q", msg)
	}
}

func TestCloseFindsLeftMappings(t *testing.T) {
	dma := fakedev.NewDMA()
	n := &fakeNIC{}
	u := Unit{NIC: n, DMA: dma}
	u.Close(t)
	if !n.closed {
		t.Fatal("Close did not close the NIC")
	}
	if _, err := dma.Map(make([]byte, 64), kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
	if msg := failtest.First(func(tb testing.TB) { u.Close(tb) }); !strings.Contains(msg, "1 DMA mappings left") {
		t.Errorf("a mapping left after close: %q", msg)
	}
}
