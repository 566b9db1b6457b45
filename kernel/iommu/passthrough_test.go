package iommu

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
)

// TestPassthrough: with translation off the DMA address is the physical
// address; the device reaches the buffer there, syncs work, and a buffer
// whose pages are not physically adjacent is refused.
func TestPassthrough(t *testing.T) {
	r := newRig(t, sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: true}, Options{})
	if err := r.u.Disable(); err != nil {
		t.Fatal(err)
	}
	dma := Passthrough(r.m.Mem)
	port := r.m.Port(devA)

	rx := make([]byte, 2*kernel.PageSize)
	addr, err := dma.Map(rx, kernel.FromDevice)
	if err != nil {
		t.Fatal(err)
	}
	if want := r.segs(rx)[0].Phys; kernel.PhysAddr(addr) != want {
		t.Fatalf("dma address %#x, physical %#x", addr, want)
	}
	if err := port.Write(uint64(addr)+10, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(rx[10:15], []byte("hello")) {
		t.Fatal("visible before SyncForCPU")
	}
	if err := dma.SyncForCPU(addr+10, 5, kernel.FromDevice); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rx[10:15], []byte("hello")) {
		t.Fatalf("after SyncForCPU: %q", rx[10:15])
	}
	if err := dma.SyncForCPU(addr+kernel.PageSize, 2*kernel.PageSize, kernel.FromDevice); !errors.Is(err, kernel.ErrNotMapped) {
		t.Errorf("sync past the mapping: %v", err)
	}
	if err := dma.Unmap(addr, 100, kernel.FromDevice); !errors.Is(err, kernel.ErrBadAddress) {
		t.Errorf("unmap with the wrong size: %v", err)
	}
	if err := dma.Unmap(addr, len(rx), kernel.FromDevice); err != nil {
		t.Fatal(err)
	}
	if err := dma.Unmap(addr, len(rx), kernel.FromDevice); !errors.Is(err, kernel.ErrNotMapped) {
		t.Errorf("second unmap: %v", err)
	}

	c, err := dma.AllocCoherent(64)
	if err != nil {
		t.Fatal(err)
	}
	copy(c.Buf, "ring")
	got := make([]byte, 4)
	if err := port.Read(uint64(c.Addr), got); err != nil || string(got) != "ring" {
		t.Errorf("device read of coherent memory: %q %v", got, err)
	}
	if err := dma.Unmap(c.Addr, 64, kernel.Bidirectional); !errors.Is(err, kernel.ErrBadAddress) {
		t.Errorf("Unmap of a coherent allocation: %v", err)
	}
	if err := dma.FreeCoherent(c); err != nil {
		t.Fatal(err)
	}

	r.m.Mem.SetScatter(true)
	if _, err := dma.Map(make([]byte, 3*kernel.PageSize), kernel.ToDevice); !errors.Is(err, kernel.ErrBadAddress) {
		t.Errorf("map of scattered pages with translation off: %v", err)
	}
	if _, err := dma.Map(nil, kernel.ToDevice); !errors.Is(err, kernel.ErrZeroLength) {
		t.Errorf("map of nothing: %v", err)
	}
	if ms := r.m.Mem.Stats(); ms.Pins != ms.Unpins {
		t.Errorf("%d pins, %d unpins", ms.Pins, ms.Unpins)
	}
}
