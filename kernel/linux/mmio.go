//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/pci"
)

// MMIO is a device register window mapped into the process: a PCI BAR from
// its sysfs resource file, or the VT-d unit from /dev/mem. It implements
// kernel.Regs. Every access is one load or store of the stated width.
//
// An access outside the window or not aligned to its width cannot reach
// the device: reads return all ones (what a master abort returns), writes
// are dropped, and the first such access is kept for Err.
type MMIO struct {
	name     string
	mem      []byte // from mmap, never from the Go heap
	base     uintptr
	borrowed bool // mapped by someone else: Close leaves it

	mu  sync.Mutex
	err error
}

// MapResource maps BAR bar of the PCI function at a through
// /sys/bus/pci/devices/<addr>/resource<bar>. That works with no kernel
// parameters even under STRICT_DEVMEM because no driver claims the device.
func MapResource(a pci.Addr, bar int) (*MMIO, error) {
	if bar < 0 || bar > 5 {
		return nil, fmt.Errorf("map %v BAR%d: no such BAR", a, bar)
	}
	path := filepath.Join("/sys/bus/pci/devices", sysfsName(a), fmt.Sprintf("resource%d", bar))
	return mapFile(path, 0, 0, fmt.Sprintf("%v BAR%d", a, bar))
}

// MapPhys maps size bytes of physical address space at base through
// /dev/mem, uncached (O_SYNC). It is how the VT-d unit named by the DMAR
// table is reached; Linux must have released it (intel_iommu=off
// intremap=off), or the kernel refuses the mapping.
func MapPhys(base uint64, size int) (*MMIO, error) {
	if size <= 0 || base%pageSize != 0 {
		return nil, fmt.Errorf("map phys %#x+%#x: %w", base, size, errUnalignedWindow)
	}
	return mapFile("/dev/mem", int64(base), size, fmt.Sprintf("phys %#x", base))
}

// sysfsName is the device directory name Linux uses: always with segment.
func sysfsName(a pci.Addr) string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Seg, a.Bus, a.Dev, a.Fn)
}

func mapFile(path string, off int64, size int, name string) (*MMIO, error) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_SYNC, 0)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", name, err)
	}
	defer f.Close()
	if size == 0 {
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("map %s: %w", name, err)
		}
		if st.Size() == 0 {
			return nil, fmt.Errorf("map %s: %s is empty (BAR not memory or not assigned)", name, path)
		}
		size = int(st.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: mmap %s at %#x size %#x: %w", name, path, off, size, err)
	}
	return newMMIO(name, mem), nil
}

// WindowOver returns a register window over mem, device memory the caller
// reaches some other way: on the metal platform, physical memory is
// identity mapped. Close leaves mem mapped.
func WindowOver(name string, mem []byte) *MMIO {
	m := newMMIO(name, mem)
	m.borrowed = true
	return m
}

func newMMIO(name string, mem []byte) *MMIO {
	return &MMIO{name: name, mem: mem, base: uintptr(unsafe.Pointer(unsafe.SliceData(mem)))}
}

// Name says what the window maps, for messages.
func (m *MMIO) Name() string { return m.name }

// Len is the size of the window in bytes.
func (m *MMIO) Len() int { return len(m.mem) }

// Err returns the first out-of-range or misaligned access, or nil.
func (m *MMIO) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Close unmaps the window; later accesses behave as out of range.
func (m *MMIO) Close() error {
	m.mu.Lock()
	mem := m.mem
	m.mem, m.base = nil, 0
	m.mu.Unlock()
	if mem == nil || m.borrowed {
		return nil
	}
	if err := unix.Munmap(mem); err != nil {
		return fmt.Errorf("unmap %s: %w", m.name, err)
	}
	return nil
}

func (m *MMIO) addr(off uint32, width int, op string) (uintptr, bool) {
	if int(off)%width == 0 && int(off)+width <= len(m.mem) {
		return m.base + uintptr(off), true
	}
	m.mu.Lock()
	if m.err == nil {
		m.err = fmt.Errorf("%s: %s%d at %#x: outside the %#x-byte window or unaligned", m.name, op, width*8, off, len(m.mem))
	}
	m.mu.Unlock()
	return 0, false
}

func (m *MMIO) Read32(off uint32) uint32 {
	p, ok := m.addr(off, 4, "read")
	if !ok {
		return ^uint32(0)
	}
	return load32(p)
}

func (m *MMIO) Read64(off uint32) uint64 {
	p, ok := m.addr(off, 8, "read")
	if !ok {
		return ^uint64(0)
	}
	return load64(p)
}

func (m *MMIO) Write32(off uint32, v uint32) {
	if p, ok := m.addr(off, 4, "write"); ok {
		store32(p, v)
	}
}

func (m *MMIO) Write64(off uint32, v uint64) {
	if p, ok := m.addr(off, 8, "write"); ok {
		store64(p, v)
	}
}
