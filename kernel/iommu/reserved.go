package iommu

import (
	"github.com/ether9/ether9/kernel"
)

// MapReserved maps the physical range [base, limit] at the same
// addresses, for reads and writes, for the life of the domain: a
// reserved memory region (an RMRR) firmware goes on using for the
// device's DMA after it hands over, which VT-d requires be mapped so
// before translation is on (8.4). Map never hands the range out.
func (d *Domain) MapReserved(base, limit uint64) error {
	start := base &^ (kernel.PageSize - 1)
	if limit < base || limit+1 == 0 {
		return d.errorf("reserved region %#x-%#x: %w", base, limit, kernel.ErrBadAddress)
	}
	size := pageUp(limit+1) - start
	d.u.mu.Lock()
	defer d.u.mu.Unlock()
	if err := d.iova.reserve(start, start+size); err != nil {
		return d.errorf("reserved region %#x-%#x: %w", base, limit, err)
	}
	if err := d.mapAt(start, size, []kernel.Segment{{Phys: kernel.PhysAddr(start), Len: int(size)}}, pteRead|pteWrite); err != nil {
		return d.errorf("reserved region %#x-%#x: %w", base, limit, err)
	}
	return nil
}
