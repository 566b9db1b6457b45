package fakedev

import (
	"fmt"
	"sync"

	"github.com/ether9/ether9/kernel"
)

type mapping struct {
	buf      []byte
	dir      kernel.Direction
	coherent bool
}

// DMA is a fake device DMA view. The zero value is not usable; call NewDMA.
type DMA struct {
	mu       sync.Mutex
	next     kernel.DMAAddr
	live     map[kernel.DMAAddr]*mapping
	failMaps int // fail this many upcoming Map calls
	failAll  bool

	Maps, Unmaps, SyncsCPU, SyncsDevice, MapFailures int

	faults uint64
}

// Fault records one DMA fault, as an IOMMU would on a refused access.
func (d *DMA) Fault() {
	d.mu.Lock()
	d.faults++
	d.mu.Unlock()
}

// DMAFaults is the number of faults recorded: the optional capability
// drivers use to drop frames whose data never arrived.
func (d *DMA) DMAFaults() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.faults
}

// NewDMA returns an empty DMA whose addresses start at 1 MiB.
func NewDMA() *DMA {
	return &DMA{next: 1 << 20, live: make(map[kernel.DMAAddr]*mapping)}
}

func (d *DMA) alloc(b []byte, m *mapping) kernel.DMAAddr {
	a := d.next
	pages := (len(b) + kernel.PageSize - 1) / kernel.PageSize
	d.next += kernel.DMAAddr((pages + 1) * kernel.PageSize) // a guard page between mappings
	m.buf = b
	d.live[a] = m
	return a
}

// AllocCoherent implements kernel.DMA.
func (d *DMA) AllocCoherent(size int) (kernel.Coherent, error) {
	if size <= 0 {
		return kernel.Coherent{}, kernel.ErrZeroLength
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	b := make([]byte, size)
	return kernel.Coherent{Buf: b, Addr: d.alloc(b, &mapping{coherent: true, dir: kernel.Bidirectional})}, nil
}

// FreeCoherent implements kernel.DMA.
func (d *DMA) FreeCoherent(c kernel.Coherent) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.live[c.Addr]
	if !ok || !m.coherent {
		return fmt.Errorf("free coherent %#x: %w", uint64(c.Addr), kernel.ErrNotMapped)
	}
	delete(d.live, c.Addr)
	return nil
}

// FailMaps makes the next n Map calls fail.
func (d *DMA) FailMaps(n int) {
	d.mu.Lock()
	d.failMaps = n
	d.mu.Unlock()
}

// FailAllMaps makes every Map fail until called with false.
func (d *DMA) FailAllMaps(on bool) {
	d.mu.Lock()
	d.failAll = on
	d.mu.Unlock()
}

// Map implements kernel.DMA.
func (d *DMA) Map(buf []byte, dir kernel.Direction) (kernel.DMAAddr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(buf) == 0 {
		return 0, kernel.ErrZeroLength
	}
	if d.failAll || d.failMaps > 0 {
		if d.failMaps > 0 {
			d.failMaps--
		}
		d.MapFailures++
		return 0, fmt.Errorf("fake map: %w", kernel.ErrNoIOVASpace)
	}
	d.Maps++
	return d.alloc(buf, &mapping{dir: dir}), nil
}

// Unmap implements kernel.DMA.
func (d *DMA) Unmap(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.live[addr]
	if !ok || m.coherent {
		return fmt.Errorf("unmap %#x: %w", uint64(addr), kernel.ErrNotMapped)
	}
	if size != len(m.buf) || dir != m.dir {
		return fmt.Errorf("unmap %#x: size %d dir %v, mapped %d %v: %w", uint64(addr), size, dir, len(m.buf), m.dir, kernel.ErrBadAddress)
	}
	delete(d.live, addr)
	d.Unmaps++
	return nil
}

func (d *DMA) check(addr kernel.DMAAddr, size int) error {
	if m, ok := d.live[addr]; ok && !m.coherent && size <= len(m.buf) {
		return nil // the usual case: a sync from the start of a mapping
	}
	for base, m := range d.live {
		if addr >= base && uint64(addr)+uint64(size) <= uint64(base)+uint64(len(m.buf)) && !m.coherent {
			return nil
		}
	}
	return fmt.Errorf("sync %#x+%d: %w", uint64(addr), size, kernel.ErrNotMapped)
}

// SyncForCPU implements kernel.DMA.
func (d *DMA) SyncForCPU(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.SyncsCPU++
	return d.check(addr, size)
}

// SyncForDevice implements kernel.DMA.
func (d *DMA) SyncForDevice(addr kernel.DMAAddr, size int, dir kernel.Direction) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.SyncsDevice++
	return d.check(addr, size)
}

// Live is the number of streaming mappings outstanding.
func (d *DMA) Live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, m := range d.live {
		if !m.coherent {
			n++
		}
	}
	return n
}

// Counts returns maps, unmaps and map failures so far.
func (d *DMA) Counts() (maps, unmaps, failures int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.Maps, d.Unmaps, d.MapFailures
}

func (d *DMA) find(addr kernel.DMAAddr, n int) ([]byte, error) {
	if m, ok := d.live[addr]; ok && n <= len(m.buf) {
		return m.buf[:n], nil
	}
	for base, m := range d.live {
		if addr >= base && uint64(addr)+uint64(n) <= uint64(base)+uint64(len(m.buf)) {
			off := int(addr - base)
			return m.buf[off : off+n], nil
		}
	}
	return nil, fmt.Errorf("device access %#x+%d: %w", uint64(addr), n, kernel.ErrNotMapped)
}

// DeviceWrite writes b at device address addr, as the device would.
func (d *DMA) DeviceWrite(addr kernel.DMAAddr, b []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	dst, err := d.find(addr, len(b))
	if err != nil {
		return err
	}
	copy(dst, b)
	return nil
}

// DeviceRead reads len(b) bytes at device address addr, as the device would.
func (d *DMA) DeviceRead(addr kernel.DMAAddr, b []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	src, err := d.find(addr, len(b))
	if err != nil {
		return err
	}
	copy(b, src)
	return nil
}
