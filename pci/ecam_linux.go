package pci

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// DevMem maps physical memory through /dev/mem. Opened with O_SYNC, the
// kernel maps the pages uncached, as configuration space must be.
type DevMem struct {
	f *os.File

	mu   sync.Mutex
	maps [][]byte
}

// OpenDevMem opens path, normally /dev/mem.
func OpenDevMem(path string) (*DevMem, error) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_SYNC, 0)
	if err != nil {
		return nil, fmt.Errorf("pci: open %s: %w", path, err)
	}
	return &DevMem{f: f}, nil
}

// Map maps size bytes at the page-aligned physical address phys.
func (d *DevMem) Map(phys uint64, size int) ([]byte, error) {
	if phys%uint64(os.Getpagesize()) != 0 {
		return nil, fmt.Errorf("pci: map %#x: not page aligned", phys)
	}
	b, err := unix.Mmap(int(d.f.Fd()), int64(phys), size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("pci: mmap %s at %#x+%#x: %w", d.f.Name(), phys, size, err)
	}
	d.mu.Lock()
	d.maps = append(d.maps, b)
	d.mu.Unlock()
	return b, nil
}

// Close unmaps every mapping and closes the file. Configs built on it must
// not be used afterwards.
func (d *DevMem) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	for _, b := range d.maps {
		if err := unix.Munmap(b); err != nil && first == nil {
			first = fmt.Errorf("pci: munmap: %w", err)
		}
	}
	d.maps = nil
	if err := d.f.Close(); err != nil && first == nil {
		first = err
	}
	return first
}
