package iommu

import (
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel"
)

// TestConcurrentUse runs map, sync and unmap from several goroutines on two
// domains while the mode flips between strict and deferred, for the race
// detector; afterwards nothing may be left mapped or pinned.
func TestConcurrentUse(t *testing.T) {
	r := qemuRig(t)
	doms := []*Domain{r.domain(devA), r.domain(devB)}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 6 {
		wg.Go(func() {
			d := doms[g%2]
			for i := range 300 {
				buf := make([]byte, 100+i*13%(3*kernel.PageSize))
				addr, err := d.Map(buf, kernel.FromDevice)
				if err != nil {
					errs <- err
					return
				}
				if err := d.SyncForCPU(addr, len(buf), kernel.FromDevice); err != nil {
					errs <- err
					return
				}
				if err := d.Unmap(addr, len(buf), kernel.FromDevice); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			m := Strict
			if i%2 == 0 {
				m = Deferred
			}
			if err := r.u.SetMode(m, 8); err != nil {
				errs <- err
				return
			}
			_ = r.u.Stats()
			_ = r.u.Faults()
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := r.u.Flush(); err != nil {
		t.Fatal(err)
	}
	s := r.u.Stats()
	if s.Maps != 1800 || s.Unmaps != 1800 || s.MappedPages != 0 || s.IOVAInUse != 0 || s.Pending != 0 {
		t.Errorf("after concurrent use: %+v", s)
	}
	if ms := r.m.Mem.Stats(); ms.Pins != ms.Unpins {
		t.Errorf("%d pins, %d unpins", ms.Pins, ms.Unpins)
	}
}
