package nictest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring/ringtest"
	"github.com/ether9/ether9/kernel"
)

// fakeNIC answers Stats and Close; nothing else is called.
type fakeNIC struct {
	nic.NIC
	closed bool
}

func (f *fakeNIC) Stats() []nic.Stat { return []nic.Stat{{Name: "rx_frames", Value: 7}} }
func (f *fakeNIC) Close() error      { f.closed = true; return nil }

// recorder keeps the failure and stops the goroutine on Fatal.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func fails(f func(testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

func TestStat(t *testing.T) {
	u := Unit{NIC: &fakeNIC{}}
	if v := u.Stat(t, "rx_frames"); v != 7 {
		t.Errorf("rx_frames %d, want 7", v)
	}
	if msg := fails(func(tb testing.TB) { u.Stat(tb, "tx_frames") }); msg != `no stat "tx_frames"` {
		t.Errorf("a missing statistic: %q", msg)
	}
}

func TestCloseFindsLeftMappings(t *testing.T) {
	dma := ringtest.New()
	n := &fakeNIC{}
	u := Unit{NIC: n, DMA: dma}
	u.Close(t)
	if !n.closed {
		t.Fatal("Close did not close the NIC")
	}
	if _, err := dma.Map(make([]byte, 64), kernel.ToDevice); err != nil {
		t.Fatal(err)
	}
	if msg := fails(func(tb testing.TB) { u.Close(tb) }); !strings.Contains(msg, "1 DMA mappings left") {
		t.Errorf("a mapping left after close: %q", msg)
	}
}
