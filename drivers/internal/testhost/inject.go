package testhost

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
)

// CheckInjectUnmappedRx runs a driver's debug inject-unmapped-rx on the
// host, which must translate DMA and have no stack on the NIC: one RX
// descriptor is armed with an IOVA the domain leaves unmapped, so the
// model's write of the frame landing there is refused and recorded by
// the VT-d model while the descriptor is still written back done. It
// checks that exactly that frame is dropped and counted (rx_drop_dma),
// that the fault is recorded as the device's write, that the ring keeps
// receiving every frame intact after it, and that nothing stays mapped
// at close. send has the far end of the wire send one frame to the NIC;
// ring is the RX ring's size in descriptors.
func (h *Node) CheckInjectUnmappedRx(t *testing.T, ring int, send func(frame []byte)) {
	t.Helper()
	if h.Unit == nil {
		t.Fatal("inject-unmapped-rx needs translation")
	}
	for _, bad := range []string{"debug nothing", "debug inject-unmapped-rx now"} {
		if err := h.NIC.Ctl(bad); err == nil {
			t.Errorf("ctl %q accepted", bad)
		}
	}
	if err := h.NIC.Ctl("debug inject-unmapped-rx"); err != nil {
		t.Fatal(err)
	}
	if err := h.NIC.Ctl("debug inject-unmapped-rx"); err == nil {
		t.Error("a second injection while one is in flight was accepted")
	}
	mac := h.NIC.MAC()
	// Frames carry their sequence number: the one missing is the one
	// the device wrote into the hole.
	frame := func(seq int) []byte {
		f := make([]byte, 200)
		copy(f, mac[:])
		copy(f[6:], []byte{0x52, 0x54, 0, 0, 0, 0xfe})
		binary.BigEndian.PutUint16(f[12:], 0x88b5) // local experimental: no RSS hash, queue 0
		binary.BigEndian.PutUint32(f[14:], uint32(seq))
		for i := 18; i < len(f); i++ {
			f[i] = byte(seq + i)
		}
		return f
	}
	var got [][]byte
	batch := make([]nic.RxPacket, 64)
	sent := 0
	// one sends a frame and polls until a queue took its descriptor.
	one := func() {
		send(frame(sent))
		sent++
		deadline := time.Now().Add(rxDeadline)
		for {
			taken := 0
			for _, q := range h.NIC.Queues() {
				n, k := q.Receive(batch)
				for _, p := range batch[:n] {
					got = append(got, p.Data.Flatten())
					p.Data.Release()
				}
				clear(batch[:n])
				taken += k
			}
			if taken > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("frame %d: no descriptor taken within %v; %d delivered; stats %v; iommu %+v", sent-1, rxDeadline, len(got), h.NIC.Stats(), h.Unit.Stats())
			}
			for _, q := range h.NIC.Queues() {
				q.Wait(time.Millisecond)
			}
		}
	}
	for i := 0; i < 3*ring && h.Unit.Stats().Faults == 0; i++ {
		one()
	}
	faults := h.Unit.Faults()
	if len(faults) != 1 || !faults[0].Write {
		t.Fatalf("after %d frames: VT-d faults %v, want one device write", sent, faults)
	}
	if d := dmaDrops(h.NIC.Stats()); d != 1 {
		t.Fatalf("rx_drop_dma %d after the fault, want 1 (%d of %d frames delivered)", d, len(got), sent)
	}
	if len(got) != sent-1 {
		t.Fatalf("%d of %d frames delivered, want all but the faulted one", len(got), sent)
	}
	for i, g := range got {
		if !bytes.Equal(g, frame(i)) {
			t.Fatalf("frame %d delivered differs from the one sent", i)
		}
	}
	// The ring goes round again: the slot is re-armed with its own buffer
	// and nothing else faults.
	base := len(got)
	for range 2 * ring {
		one()
	}
	for i, g := range got[base:] {
		if !bytes.Equal(g, frame(base+1+i)) {
			t.Fatalf("frame %d after the fault differs from the one sent", base+1+i)
		}
	}
	if n := len(got) - base; n != 2*ring {
		t.Fatalf("after the fault %d of %d frames delivered", n, 2*ring)
	}
	if n := h.Unit.Stats().Faults; n != 1 {
		t.Fatalf("%d faults after the ring went round, want 1", n)
	}
	// The hole went back: another injection is taken, and the close
	// gives up its hole with everything else.
	if err := h.NIC.Ctl("debug inject-unmapped-rx"); err != nil {
		t.Fatalf("a second injection after the first completed: %v", err)
	}
	if err := h.NIC.Close(); err != nil {
		t.Fatal(err)
	}
	h.CheckNoLeaks(t)
}

// dmaDrops sums the NIC's rx_drop_dma counters, per queue or not.
func dmaDrops(stats []nic.Stat) uint64 {
	var n uint64
	for _, s := range stats {
		if s.Name == "rx_drop_dma" || strings.HasSuffix(s.Name, "_rx_drop_dma") {
			n += s.Value
		}
	}
	return n
}
