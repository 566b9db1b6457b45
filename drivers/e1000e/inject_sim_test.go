package e1000e_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel/iommu"
)

// logLines collects a driver's log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) find(prefix string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			return s
		}
	}
	return ""
}

// TestSimInjectUnmappedRx: the debug command points one RX descriptor at an
// IOVA the domain leaves unmapped. The model's write of the frame there is
// refused by the VT-d model and recorded; the model still completes the
// descriptor; the driver sees the fault count move, drops what that poll
// held, re-arms the slot with its own buffer and receives every frame
// after it intact.
func TestSimInjectUnmappedRx(t *testing.T) {
	for _, nc := range []bool{false, true} {
		t.Run(fmt.Sprintf("noncoherent=%v", nc), func(t *testing.T) { testInjectUnmappedRx(t, nc) })
	}
}

func testInjectUnmappedRx(t *testing.T, nc bool) {
	log := &logLines{}
	mc := newMachine(t, rigOpt{nonCoherent: nc, logf: log.logf})
	unit := mc.Unit
	dom, err := unit.Domain(iommu.SourceID(machineAddr.Bus, machineAddr.Dev, machineAddr.Fn))
	if err != nil {
		t.Fatal(err)
	}

	for _, bad := range []string{"debug", "debug nothing", "debug inject-unmapped-rx now"} {
		if err := mc.NIC.Ctl(bad); err == nil {
			t.Errorf("ctl %q accepted", bad)
		}
	}
	if err := mc.NIC.Ctl("debug inject-unmapped-rx"); err != nil {
		t.Fatal(err)
	}
	if err := mc.NIC.Ctl("debug inject-unmapped-rx"); err == nil {
		t.Error("a second injection while one is in flight was accepted")
	}

	// Every frame has its sequence number in it; the device works through
	// the ring until it reaches the poisoned descriptor, armed by the first
	// refill after the command.
	var got [][]byte
	sent := 0
	send := func() {
		mc.wire.B().Send(mc.frame(200, byte(sent)))
		sent++
		for _, p := range mc.poll() {
			got = append(got, p.Data.Flatten())
			p.Data.Release()
		}
	}
	armed := ""
	for i := 0; i < 600 && unit.Stats().Faults == 0; i++ {
		send()
		if armed == "" {
			armed = log.find("ether0: debug: rx descriptor ")
		}
	}
	if armed == "" {
		t.Fatal("no descriptor was armed with the hole")
	}
	faults := unit.Faults()
	if len(faults) != 1 {
		t.Fatalf("after %d frames: faults %v, want one", sent, faults)
	}
	f := faults[0]
	var desc int
	var hole uint64
	if _, err := fmt.Sscanf(armed, "ether0: debug: rx descriptor %d armed with unmapped iova %v", &desc, &hole); err != nil {
		t.Fatalf("log line %q: %v", armed, err)
	}
	if f.Source != dom.Source() || !f.Write || f.Addr != hole {
		t.Fatalf("fault %v, want a write by %04x at the hole %#x", f, dom.Source(), hole)
	}
	if dom.DMAFaults() != 1 {
		t.Fatalf("domain fault count %d, want 1", dom.DMAFaults())
	}
	dropped := mc.Stat(t, "rx_drop_dma")
	if dropped != 1 || log.find("ether0: rx: dma fault: dropped 1 frames") == "" {
		t.Fatalf("rx_drop_dma %d, want 1; log %q", dropped, log.lines)
	}
	// The faulted frame is the one missing; everything before arrived.
	if len(got) != sent-1 {
		t.Fatalf("%d of %d frames delivered, want all but one", len(got), sent)
	}
	for i, g := range got {
		if !bytes.Equal(g, mc.frame(200, byte(i))) {
			t.Fatalf("frame %d differs", i)
		}
	}
	// Keep going: the poisoned slot is re-armed with a good buffer (the
	// ring comes round to it again) and nothing else faults.
	before := len(got)
	base := sent
	for i := 0; i < 300; i++ {
		send()
	}
	if n := len(got) - before; n != 300 {
		t.Fatalf("after the fault %d of 300 frames delivered", n)
	}
	for i, g := range got[before:] {
		if !bytes.Equal(g, mc.frame(200, byte(base+i))) {
			t.Fatalf("frame %d after the fault differs", i)
		}
	}
	if n := unit.Stats().Faults; n != 1 {
		t.Fatalf("%d faults after the ring went round, want 1", n)
	}
	// The hole went back; another injection works the same way.
	if err := mc.NIC.Ctl("debug inject-unmapped-rx"); err != nil {
		t.Fatalf("second injection after the first completed: %v", err)
	}
	mc.close(t)
}

// With translation off there is no hole to point at: the command is
// refused instead of aiming the device at physical memory.
func TestInjectRefusedWithoutIOMMU(t *testing.T) {
	mc := newMachine(t, rigOpt{passthrough: true})
	err := mc.NIC.Ctl("debug inject-unmapped-rx")
	if err == nil || !strings.Contains(err.Error(), "translation off") {
		t.Fatalf("inject with passthrough DMA: %v", err)
	}
	mc.close(t)
}
