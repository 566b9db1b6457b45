package iommu

import (
	"errors"
	"testing"

	"github.com/ether9/ether9/kernel"
)

// A hole is IOVA space no Map receives: a device write there is refused
// and counted against that device's domain only, and the range returns to
// the allocator when released.
func TestHoleFaultsAndCountsPerDomain(t *testing.T) {
	r := qemuRig(t)
	a, b := r.domain(devA), r.domain(devB)
	hole, err := a.ReserveHole(2048)
	if err != nil {
		t.Fatal(err)
	}
	if hole%kernel.PageSize != 0 {
		t.Fatalf("hole %#x is not page aligned", hole)
	}
	// Maps made after the reservation never land in it.
	var bufs [][]byte
	for i := 0; i < 8; i++ {
		buf := make([]byte, kernel.PageSize)
		addr, err := a.Map(buf, kernel.FromDevice)
		if err != nil {
			t.Fatal(err)
		}
		if addr&^(kernel.PageSize-1) == hole {
			t.Fatalf("map %d got the hole's IOVA %#x", i, hole)
		}
		bufs = append(bufs, buf)
	}
	if n := a.DMAFaults(); n != 0 {
		t.Fatalf("faults before any DMA: %d", n)
	}
	if err := r.m.Port(devA).Write(uint64(hole)+0x40, make([]byte, 64)); err == nil {
		t.Fatal("device write into the hole succeeded")
	}
	// DMAFaults reads the registers itself: no one else polled them.
	if n := a.DMAFaults(); n != 1 {
		t.Fatalf("domain A faults = %d, want 1", n)
	}
	if n := b.DMAFaults(); n != 0 {
		t.Fatalf("domain B faults = %d, want 0 (the fault was A's)", n)
	}
	f := r.u.Faults()
	if len(f) != 1 || f[0].Source != source(devA) || f[0].Addr != uint64(hole) || !f[0].Write {
		t.Fatalf("faults %v, want one write by %v at %#x", f, devA, uint64(hole))
	}
	// Clearing the log keeps the counts.
	r.u.ClearFaults()
	if n := a.DMAFaults(); n != 1 {
		t.Fatalf("domain A faults after ClearFaults = %d, want 1", n)
	}

	if err := a.ReleaseHole(hole + 4096); !errors.Is(err, kernel.ErrNotMapped) {
		t.Fatalf("release of no hole: %v, want ErrNotMapped", err)
	}
	if err := a.ReleaseHole(hole); err != nil {
		t.Fatal(err)
	}
	if err := a.ReleaseHole(hole); !errors.Is(err, kernel.ErrNotMapped) {
		t.Fatalf("second release: %v, want ErrNotMapped", err)
	}
	// Released space is allocated again (first fit, lowest free range).
	addr, err := a.Map(make([]byte, kernel.PageSize), kernel.FromDevice)
	if err != nil {
		t.Fatal(err)
	}
	if addr != hole {
		t.Fatalf("map after release at %#x, want the freed %#x", addr, hole)
	}
	if _, err := a.ReserveHole(0); !errors.Is(err, kernel.ErrZeroLength) {
		t.Fatalf("zero-size hole: %v, want ErrZeroLength", err)
	}
}
