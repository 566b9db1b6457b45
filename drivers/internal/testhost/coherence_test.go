package testhost

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/internal/failtest"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// TestProbeNonCoherent: coherent memory fails the probe, non-coherent
// memory passes it, and the probe leaves no pin behind.
func TestProbeNonCoherent(t *testing.T) {
	mem := sim.NewMemory()
	if msg := failtest.First(func(tb testing.TB) { probeNonCoherent(tb, mem) }); !strings.Contains(msg, "reports coherent DMA") {
		t.Errorf("coherent memory: %q", msg)
	}
	mem.SetCoherent(false)
	probeNonCoherent(t, mem)
	if st := mem.Stats(); st.Pins != st.Unpins || st.Misuses != 0 {
		t.Errorf("after the probe: %d pins, %d unpins, %d misuses", st.Pins, st.Unpins, st.Misuses)
	}
}

// TestCheckNonCoherent: a non-coherent host that received frames passes;
// a coherent one fails.
func TestCheckNonCoherent(t *testing.T) {
	plug := func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) { return m82574.Plug(m, a, m82574.Options{}) }
	w := Wire(t, wire.Options{})
	h := New(t, Options{Addr: pci.Addr{Dev: 2}, End: w.A(), NonCoherent: true}, plug)
	f := make([]byte, 60)
	mac := h.NIC.MAC()
	copy(f, mac[:])
	w.B().Send(f)
	if n := nictest.Receive(h.NIC.Queues()[0], 8, func(p *nic.RxPacket) { p.Data.Release() }); n != 1 {
		t.Fatalf("%d frames received, want 1", n)
	}
	h.CheckNonCoherent(t)
	h.Close(t)

	// A coherent host's memory takes the syncs to check ownership, so it
	// does not report coherent DMA: the probe's device write shows it.
	c := New(t, Options{Addr: pci.Addr{Dev: 2}}, plug)
	defer c.Close(t)
	if msg := failtest.First(c.CheckNonCoherent); !strings.Contains(msg, "the memory runs coherent") {
		t.Errorf("a coherent host: %q", msg)
	}
}
