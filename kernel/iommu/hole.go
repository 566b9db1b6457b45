package iommu

import (
	"github.com/ether9/ether9/kernel"
)

// ReserveHole takes size bytes (rounded up to pages) of the domain's IOVA
// space and maps nothing there, so that any device access to the range is
// refused and recorded as a fault, never redirected into memory a later
// Map received. It exists to prove fault handling on a running system.
// The range stays reserved until ReleaseHole.
func (d *Domain) ReserveHole(size int) (kernel.DMAAddr, error) {
	if size <= 0 {
		return 0, d.errorf("reserve hole of %d bytes: %w", size, kernel.ErrZeroLength)
	}
	span := pageUp(uint64(size))
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	// A free IOVA is neither mapped nor cached: ranges return to the
	// allocator only after their invalidation completed.
	iova, err := d.iova.alloc(span, kernel.PageSize, 0)
	if err != nil {
		return 0, d.errorf("reserve hole of %d bytes: %w", size, err)
	}
	if d.holes == nil {
		d.holes = make(map[uint64]uint64)
	}
	d.holes[iova] = span
	return kernel.DMAAddr(iova), nil
}

// ReleaseHole returns a range from ReserveHole to the IOVA allocator. The
// device must no longer be pointed at it.
func (d *Domain) ReleaseHole(addr kernel.DMAAddr) error {
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	span, ok := d.holes[uint64(addr)]
	if !ok {
		return d.errorf("release hole %#x: %w", uint64(addr), kernel.ErrNotMapped)
	}
	if err := d.iova.release(uint64(addr), span); err != nil {
		return d.errorf("release hole %#x: %w", uint64(addr), err)
	}
	delete(d.holes, uint64(addr))
	return nil
}
