package testhost

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim"
)

// probeNonCoherent checks that mem's streaming memory really is
// non-coherent, so that a missing sync shows: the DMA layer must not
// skip the syncs (DMACoherent false), and a device write into a pinned
// buffer must reach the CPU only at SyncForCPU.
func probeNonCoherent(t testing.TB, mem *sim.Memory) {
	t.Helper()
	if mem.DMACoherent() {
		t.Fatal("non-coherent host: its memory reports coherent DMA, so every sync the drivers make is skipped")
	}
	buf := make([]byte, 64)
	segs, err := mem.Pin(buf)
	if err != nil {
		t.Fatalf("non-coherent probe: pin: %v", err)
	}
	defer func() {
		if err := mem.Unpin(buf); err != nil {
			t.Errorf("non-coherent probe: unpin: %v", err)
		}
	}()
	if err := mem.DeviceWrite(segs[0].Phys, []byte{0xa5}); err != nil {
		t.Fatalf("non-coherent probe: device write: %v", err)
	}
	if buf[0] == 0xa5 {
		t.Fatal("non-coherent host: a device write reached the CPU before SyncForCPU: the memory runs coherent")
	}
	mem.SyncForCPU(segs[0].Phys, 1)
	if buf[0] != 0xa5 {
		t.Fatal("non-coherent host: a device write did not reach the CPU at SyncForCPU")
	}
}

// CheckNonCoherent checks, at the end of a test of a host its rig asked
// to be non-coherent, that the memory is non-coherent and, if the NIC
// received frames, that syncs for the CPU reached it since the driver
// bound: a rig that silently runs coherent passes with missing syncs,
// and so does a run whose syncs never reach the memory.
func (h *Node) CheckNonCoherent(t testing.TB) {
	t.Helper()
	syncs := h.Machine.Mem.Stats().SyncsForCPU - h.cpuSyncs
	if rx := h.Stat(t, "rx_frames"); rx > 0 && syncs == 0 {
		t.Errorf("non-coherent host: %d frames received and no sync for the CPU reached the memory", rx)
	}
	probeNonCoherent(t, h.Machine.Mem)
}
