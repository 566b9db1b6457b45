package testhost

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/internal/failtest"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

func TestPeerKeepsFrames(t *testing.T) {
	w := Wire(t, wire.Options{})
	p := NewPeer(w.B())
	sent := [][]byte{bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 1514)}
	for _, f := range sent {
		w.A().Send(f)
	}
	got := p.Frames()
	if len(got) != 2 || p.Len() != 2 || !bytes.Equal(got[0], sent[0]) || !bytes.Equal(got[1], sent[1]) {
		t.Fatalf("peer kept %d frames", len(got))
	}
	sent[0][0] = 9 // the wire's sender owns its buffer
	if p.Frames()[0][0] != 1 {
		t.Error("the peer kept the sender's buffer, not a copy")
	}
	p.Reset()
	if p.Len() != 0 {
		t.Errorf("%d frames after Reset", p.Len())
	}
}

func TestHostChecks(t *testing.T) {
	w := Wire(t, wire.Options{})
	h := New(t, Options{Addr: pci.Addr{Dev: 2}, End: w.A()}, func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) {
		return m82574.Plug(m, a, m82574.Options{})
	})
	if h.NIC.MAC() != h.Model.MAC() || h.Unit == nil || !h.NIC.Link().Up {
		t.Fatalf("NIC %x on model %x, unit %v, link %+v (the model on its wire is up)", h.NIC.MAC(), h.Model.MAC(), h.Unit, h.NIC.Link())
	}
	if h.Stat(t, "rx_frames") != 0 {
		t.Error("frames counted before any arrived")
	}
	h.Close(t)
	h.CheckNoFaults(t)
	h.CheckNoLeaks(t)

	// A buffer left pinned is a leak.
	buf := make([]byte, 4096)
	if _, err := h.Machine.Mem.Pin(buf); err != nil {
		t.Fatal(err)
	}
	errs := failtest.Run(h.CheckNoLeaks)
	if len(errs) != 1 || !strings.Contains(errs[0], "pins") {
		t.Errorf("a pinned buffer after close: %q", errs)
	}
}

// TestHostChecksOwnership: a coherent host's memory still tracks who owns
// a streaming buffer, and the check every host runs when its test ends
// fails on a device write to bytes synced for the CPU and not handed
// back, and only then.
func TestHostChecksOwnership(t *testing.T) {
	for _, misuse := range []bool{false, true} {
		// The host's failures go to rec, its cleanups run at the end of
		// the subtest.
		rec := &failtest.TB{}
		t.Run(fmt.Sprintf("misuse=%v", misuse), func(t *testing.T) {
			rec.TB = t
			h := New(rec, Options{Addr: pci.Addr{Dev: 2}}, func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) {
				return m82574.Plug(m, a, m82574.Options{})
			})
			defer h.Close(rec)
			mem := h.Machine.Mem
			buf := make([]byte, 2048)
			segs, err := mem.Pin(buf)
			if err != nil {
				t.Fatal(err)
			}
			defer mem.Unpin(buf)
			mem.SyncForCPU(segs[0].Phys, 64)
			if !misuse {
				mem.SyncForDevice(segs[0].Phys, 64)
			}
			if err := mem.DeviceWrite(segs[0].Phys, make([]byte, 64)); err != nil {
				t.Fatal(err)
			}
		})
		switch {
		case !misuse && len(rec.Errors) != 0:
			t.Errorf("a device write to bytes handed back: %q", rec.Errors)
		case misuse && (len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], "owned by the CPU since SyncForCPU, no SyncForDevice")):
			t.Errorf("a device write to CPU-owned bytes: %q", rec.Errors)
		}
	}
}
