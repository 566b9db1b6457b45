package e1000e_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim/wire"
	"gvisor.dev/gvisor/pkg/buffer"
)

// txArmed parses the driver's log line for an armed TX injection.
func txArmed(t *testing.T, log *logLines) (desc int, hole uint64) {
	t.Helper()
	line := log.find("ether0: debug: tx descriptor ")
	if line == "" {
		t.Fatalf("no TX descriptor was armed with the hole; log %q", log.lines)
	}
	if _, err := fmt.Sscanf(line, "ether0: debug: tx descriptor %d armed with unmapped iova %v", &desc, &hole); err != nil {
		t.Fatalf("log line %q: %v", line, err)
	}
	return desc, hole
}

// checkOneReadFault checks that unit recorded exactly one fault: a read
// by source at hole.
func checkOneReadFault(t *testing.T, unit *iommu.Unit, source uint16, hole uint64) {
	t.Helper()
	faults := unit.Faults()
	if len(faults) != 1 {
		t.Fatalf("VT-d faults %v, want one", faults)
	}
	if f := faults[0]; f.Source != source || f.Write || f.Addr != hole {
		t.Fatalf("fault %v, want a read by %04x at the hole %#x", f, source, hole)
	}
}

// TestSimInjectUnmappedTx: the debug command points the first data
// descriptor of the next packet at an IOVA the domain leaves unmapped. The
// model's read there is refused by the VT-d model and recorded; the model
// drops the packet and still writes DD. A receive poll in between does not
// take that fault for its own; the driver counts it once, gives the hole
// back and sends its copy of the packet again, so every frame reaches the
// wire exactly once and nothing stays mapped.
func TestSimInjectUnmappedTx(t *testing.T) {
	for _, nc := range []bool{false, true} {
		t.Run(fmt.Sprintf("noncoherent=%v", nc), func(t *testing.T) { testInjectUnmappedTx(t, nc) })
	}
}

func testInjectUnmappedTx(t *testing.T, nc bool) {
	log := &logLines{}
	mc := newMachine(t, rigOpt{nonCoherent: nc, logf: log.logf})
	dom, err := mc.Unit.Domain(iommu.SourceID(machineAddr.Bus, machineAddr.Dev, machineAddr.Fn))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"debug inject-unmapped-tx now", "debug inject-unmapped"} {
		if err := mc.NIC.Ctl(bad); err == nil {
			t.Errorf("ctl %q accepted", bad)
		}
	}
	if err := mc.NIC.Ctl("debug inject-unmapped-tx"); err != nil {
		t.Fatal(err)
	}
	if err := mc.NIC.Ctl("debug inject-unmapped-tx"); err == nil {
		t.Error("a second injection while one is in flight was accepted")
	}

	mac := mc.NIC.MAC()
	out := func(n int, seq byte) []byte {
		f := mc.frame(n, seq)
		copy(f, []byte{0x02, 0, 0, 0, 0, 9})
		copy(f[6:], mac[:])
		return f
	}
	sent := [][]byte{out(1000, 0)}
	mc.peer.Reset()
	if n, err := mc.q.Transmit([]*nic.TxPacket{{Data: buffer.MakeWithData(bytes.Clone(sent[0]))}}); n != 1 || err != nil {
		t.Fatalf("transmit: %d %v", n, err)
	}
	desc, hole := txArmed(t, log)
	checkOneReadFault(t, mc.Unit, dom.Source(), hole)
	if got := mc.Model.Counters().TxDMAFaults; got != 1 {
		t.Errorf("model counted %d transmit DMA faults, want 1", got)
	}
	if mc.peer.Len() != 0 {
		t.Fatalf("the model put %d frames on the wire for a packet it could not read", mc.peer.Len())
	}
	// A receive poll before the transmit path looked: its frame is not
	// dropped for the transmit path's fault.
	if got := mc.deliver(t, mc.frame(300, 7)); got != 1 {
		t.Fatalf("a frame received after the transmit fault: %d delivered", got)
	}
	if n := mc.Stat(t, "rx_drop_dma"); n != 0 {
		t.Fatalf("rx_drop_dma %d after a transmit fault", n)
	}
	// The reclaim sends the copy; later packets go out as usual.
	mc.q.Reclaim()
	for k := 1; k < 8; k++ {
		f := out(60+200*k, byte(k))
		sent = append(sent, f)
		if n, err := mc.q.Transmit([]*nic.TxPacket{{Data: buffer.MakeWithData(bytes.Clone(f))}}); n != 1 || err != nil {
			t.Fatalf("transmit %d: %d %v", k, n, err)
		}
		mc.q.Reclaim()
	}
	seen := mc.peer.Frames()
	if len(seen) != len(sent) {
		t.Fatalf("%d frames on the wire, want %d (each once)", len(seen), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(seen[i], sent[i]) {
			t.Fatalf("frame %d on the wire differs from the one sent", i)
		}
	}
	for name, want := range map[string]uint64{"tx_dma_faults": 1, "tx_dma_resent": 1, "rx_drop_dma": 0} {
		if got := mc.Stat(t, name); got != want {
			t.Errorf("%s %d, want %d", name, got, want)
		}
	}
	if line := log.find(fmt.Sprintf("ether0: tx: dma fault on descriptor %d ", desc)); line == "" {
		t.Errorf("no fault line for descriptor %d; log %q", desc, log.lines)
	}
	if n := mc.Unit.Stats().Faults; n != 1 {
		t.Fatalf("%d faults after the ring went on, want 1", n)
	}
	// The hole went back; another injection is accepted and, left
	// pending, released at close.
	if err := mc.NIC.Ctl("debug inject-unmapped-tx"); err != nil {
		t.Fatalf("second injection after the first completed: %v", err)
	}
	mc.close(t)
}

// A TSO packet, its payload copied into 20 bounce slots, carries the
// hole in its header descriptor: the whole packet is sent again, and
// nothing of it was mapped.
func TestSimInjectUnmappedTxTSO(t *testing.T) {
	log := &logLines{}
	mc := newMachine(t, rigOpt{logf: log.logf})
	if err := mc.NIC.Ctl("debug inject-unmapped-tx"); err != nil {
		t.Fatal(err)
	}
	const payload = 40000
	p, _, _ := nictest.GSOPacket(false, 1000, payload)
	maps := mc.IOMMUStats().Maps
	mc.send(t, p)
	if n := mc.IOMMUStats().Maps - maps; n != 0 {
		t.Fatalf("%d maps for a TSO packet", n)
	}
	_, hole := txArmed(t, log)
	checkOneReadFault(t, mc.Unit, iommu.SourceID(machineAddr.Bus, machineAddr.Dev, machineAddr.Fn), hole)
	mc.q.Reclaim()
	nictest.CheckGSO(t, mc.peer.Frames(), false, 1000, payload)
	if got := mc.Stat(t, "tx_dma_resent"); got != 1 {
		t.Errorf("tx_dma_resent %d", got)
	}
	mc.close(t)
}

// With translation off there is no hole: the command is refused.
func TestInjectTxRefusedWithoutIOMMU(t *testing.T) {
	mc := newMachine(t, rigOpt{passthrough: true})
	if err := mc.NIC.Ctl("debug inject-unmapped-tx"); err == nil {
		t.Fatal("inject-unmapped-tx accepted with passthrough DMA")
	}
	mc.close(t)
}

// TestSimInjectUnmappedTxTCP: gVisor on two simulated machines; one
// packet of a TCP stream is injected with the hole. The stream's SHA-256
// matches both ways, the fault is recorded and counted once, no received
// frame is dropped for it, and nothing stays mapped.
func TestSimInjectUnmappedTxTCP(t *testing.T) {
	w := testhost.Wire(t, wire.Options{})
	log := &logLines{}
	a := newHost(t, w.A(), 1, log.logf)
	b := newHost(t, w.B(), 2, t.Logf)
	if err := a.NIC.Ctl("debug inject-unmapped-tx"); err != nil {
		t.Fatal(err)
	}
	testhost.TCP(t, a.Stack, b.Stack, netip.MustParseAddr("10.9.0.2"), 1<<20, nil)
	testhost.TCP(t, b.Stack, a.Stack, netip.MustParseAddr("10.9.0.1"), 1<<20, nil)
	_, hole := txArmed(t, log)
	checkOneReadFault(t, a.Unit, iommu.SourceID(machineAddr.Bus, machineAddr.Dev, machineAddr.Fn), hole)
	for name, want := range map[string]uint64{"tx_dma_faults": 1, "tx_dma_resent": 1, "rx_drop_dma": 0} {
		if got := a.Stat(t, name); got != want {
			t.Errorf("%s %d, want %d", name, got, want)
		}
	}
	b.CheckNoFaults(t)
	a.Close(t)
	b.Close(t)
	a.CheckNoLeaks(t)
	b.CheckNoLeaks(t)
}

// An injection whose packet is still in the ring when the ring is reset,
// resized or closed is ended there: its fault is counted, the hole goes
// back, the driver's copy is dropped with the rest of the ring, and
// nothing stays mapped or reserved.
func TestSimInjectUnmappedTxRingTorn(t *testing.T) {
	for _, step := range []string{"reset", "txring 128", "close"} {
		t.Run(step, func(t *testing.T) {
			log := &logLines{}
			mc := newMachine(t, rigOpt{logf: log.logf})
			if err := mc.NIC.Ctl("debug inject-unmapped-tx"); err != nil {
				t.Fatal(err)
			}
			f := mc.frame(500, 3)
			if n, err := mc.q.Transmit([]*nic.TxPacket{{Data: buffer.MakeWithData(f)}}); n != 1 || err != nil {
				t.Fatalf("transmit: %d %v", n, err)
			}
			txArmed(t, log) // no reclaim: the packet is still the ring's
			if step == "close" {
				mc.close(t)
				return
			}
			if err := mc.NIC.Ctl(step); err != nil {
				t.Fatal(err)
			}
			if log.find("ether0: tx: dma fault on descriptor ") == "" {
				t.Errorf("the fault was not accounted at %s; log %q", step, log.lines)
			}
			mc.q.Reclaim()
			for name, want := range map[string]uint64{"tx_dma_faults": 1, "tx_dma_resent": 0} {
				if got := mc.Stat(t, name); got != want {
					t.Errorf("%s %d, want %d", name, got, want)
				}
			}
			// The hole is free again: a new injection works end to end.
			if err := mc.NIC.Ctl("debug inject-unmapped-tx"); err != nil {
				t.Fatalf("injection after %s: %v", step, err)
			}
			mc.send(t, &nic.TxPacket{Data: buffer.MakeWithData(bytes.Clone(f))})
			if seen := mc.peer.Frames(); len(seen) != 1 || !bytes.Equal(seen[0], f) {
				t.Fatalf("after %s: %d frames on the wire", step, len(seen))
			}
			mc.close(t)
		})
	}
}
