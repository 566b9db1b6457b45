//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/kernel"
)

const hugePageSize = 2 << 20

// MemoryOptions says how DMA memory is obtained.
type MemoryOptions struct {
	// HugePages is how many 2 MiB pages to reserve through
	// /proc/sys/vm/nr_hugepages for Alloc. 0 leaves the setting alone and
	// uses whatever is free; with none free Alloc uses 4 KiB pages.
	HugePages int
	// SmallChunk is the size of each 4 KiB-page mapping Alloc makes when no
	// hugepage is left (default 256 KiB); it keeps the physically
	// contiguous runs it finds there.
	SmallChunk int
}

// Memory is kernel.Memory on Linux: pinned memory with physical addresses
// from /proc/self/pagemap. Nothing it hands out can move: the process is
// locked in memory (mlockall, each page from its first touch), transparent
// hugepages are off for it (no khugepaged collapse), and compaction of
// locked pages is off. Alloc prefers
// hugepages (2 MiB, physically contiguous by construction).
type Memory struct {
	opt MemoryOptions
	pm  *pagemap

	mu       sync.Mutex
	pool     *pool
	maps     [][]byte // every mapping made for the pool
	hugeFail error    // why the last hugepage mapping failed
	pinned   map[pinKey]*pinEntry

	// Notes are facts about the set-up worth a console line: steps that
	// failed without making the memory unusable.
	Notes []string
}

type pinKey struct {
	p unsafe.Pointer
	n int
}

type pinEntry struct {
	buf   []byte // keeps the buffer alive while a device may use it
	count int
}

// NewMemory locks the process in memory and prepares DMA allocation. It
// fails only if memory cannot be pinned or translated at all.
func NewMemory(opt MemoryOptions) (*Memory, error) {
	if opt.SmallChunk <= 0 {
		opt.SmallChunk = 256 << 10
	}
	opt.SmallChunk = int(alignUp(uint64(opt.SmallChunk), pageSize))
	m := &Memory{opt: opt, pool: newPool(), pinned: make(map[pinKey]*pinEntry)}
	// Lock every page as it is first touched: resident pages can neither
	// be swapped nor (with compaction of locked pages off) migrated.
	// MCL_ONFAULT leaves untouched reservations alone; locking all of the Go
	// runtime's address space up front costs most of a second under TCG.
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT); err != nil {
		if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
			return nil, fmt.Errorf("memory: mlockall: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("memory: disable transparent hugepages: %w", err)
	}
	if err := writeSysctl("/proc/sys/vm/compact_unevictable_allowed", "0"); err != nil {
		// Kernels without CONFIG_COMPACTION have no such knob and do not
		// compact at all.
		m.Notes = append(m.Notes, fmt.Sprintf("compaction of locked pages: %v", err))
	}
	if opt.HugePages > 0 {
		if err := writeSysctl("/proc/sys/vm/nr_hugepages", strconv.Itoa(opt.HugePages)); err != nil {
			m.Notes = append(m.Notes, fmt.Sprintf("hugepages: %v", err))
		}
	}
	pm, err := openPagemap()
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	m.pm = pm
	return m, nil
}

func writeSysctl(path, v string) error {
	if err := os.WriteFile(path, []byte(v), 0); err != nil {
		return err
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(string(got)); s != v {
		return fmt.Errorf("%s is %s after writing %s", path, s, v)
	}
	return nil
}

// HugePagesFree reads how many 2 MiB pages the kernel has free.
func HugePagesFree() (int, error) {
	b, err := os.ReadFile("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
	if err != nil {
		return 0, fmt.Errorf("hugepages: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("hugepages: free_hugepages %q: %w", b, err)
	}
	return n, nil
}

// Alloc returns zeroed, pinned, physically contiguous memory.
func (m *Memory) Alloc(size, align int) (kernel.Region, error) {
	switch {
	case size <= 0:
		return kernel.Region{}, fmt.Errorf("alloc %d bytes: %w", size, kernel.ErrZeroLength)
	case align <= 0 || align&(align-1) != 0:
		return kernel.Region{}, fmt.Errorf("alloc align %d: %w: not a power of two", align, kernel.ErrUnaligned)
	case size > hugePageSize || align > hugePageSize:
		return kernel.Region{}, fmt.Errorf("alloc %d bytes align %d: %w: larger than one 2 MiB page", size, align, kernel.ErrNoMemory)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.pool.alloc(size, align); ok {
		return r, nil
	}
	if err := m.growHuge(); err == nil {
		if r, ok := m.pool.alloc(size, align); ok {
			return r, nil
		}
	} else {
		m.hugeFail = err
	}
	if size+align <= m.opt.SmallChunk {
		if err := m.growSmall(); err != nil {
			return kernel.Region{}, fmt.Errorf("alloc %d bytes: %w", size, err)
		}
		if r, ok := m.pool.alloc(size, align); ok {
			return r, nil
		}
	}
	return kernel.Region{}, fmt.Errorf("alloc %d bytes align %d: %w: no hugepage (%v) and no physically contiguous run of 4 KiB pages", size, align, kernel.ErrNoMemory, m.hugeFail)
}

// growHuge adds one 2 MiB hugepage to the pool.
func (m *Memory) growHuge() error {
	b, err := unix.Mmap(-1, 0, hugePageSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB|unix.MAP_POPULATE|unix.MAP_LOCKED)
	if err != nil {
		return fmt.Errorf("mmap hugepage: %w", err)
	}
	if err := unix.Mlock(b); err != nil {
		unix.Munmap(b)
		return fmt.Errorf("mlock hugepage: %w", err)
	}
	f, err := m.pm.frames(uintptr(unsafe.Pointer(unsafe.SliceData(b))), 1)
	if err != nil {
		unix.Munmap(b)
		return err
	}
	if f[0]%hugePageSize != 0 {
		unix.Munmap(b)
		return fmt.Errorf("hugepage at physical %#x is not 2 MiB aligned", f[0])
	}
	m.maps = append(m.maps, b)
	m.pool.add(b, f[0])
	return nil
}

// growSmall maps SmallChunk bytes of 4 KiB pages and adds each physically
// contiguous run of them to the pool.
func (m *Memory) growSmall() error {
	b, err := unix.Mmap(-1, 0, m.opt.SmallChunk, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE|unix.MAP_LOCKED)
	if err != nil {
		return fmt.Errorf("mmap %d bytes: %w", m.opt.SmallChunk, err)
	}
	if err := unix.Mlock(b); err != nil {
		unix.Munmap(b)
		return fmt.Errorf("mlock %d bytes: %w", len(b), err)
	}
	n := len(b) / pageSize
	frames, err := m.pm.frames(uintptr(unsafe.Pointer(unsafe.SliceData(b))), n)
	if err != nil {
		unix.Munmap(b)
		return err
	}
	m.maps = append(m.maps, b)
	starts := runs(frames)
	for i, s := range starts {
		end := n
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		m.pool.add(b[s*pageSize:end*pageSize:end*pageSize], frames[s])
	}
	return nil
}

// Free returns a region obtained from Alloc to the pool. The memory stays
// mapped and pinned for later allocations.
func (m *Memory) Free(r kernel.Region) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pool.release(r)
}

// Pin locks buf's pages and resolves them one by one. Go's collector does
// not move heap objects and the kernel does not move locked pages, so they
// stay where they are; Pin keeps a reference so buf stays allocated until
// Unpin. The pages stay locked after Unpin: the whole process is.
func (m *Memory) Pin(buf []byte) ([]kernel.Segment, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("pin: %w", kernel.ErrZeroLength)
	}
	virt := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	pages := int((uint64(virt)%pageSize + uint64(len(buf)) + pageSize - 1) / pageSize)
	// mlock faults in any page of buf not yet touched (fresh heap memory
	// the runtime knows to be zero) and locks it where it is.
	start := virt &^ (pageSize - 1)
	if _, _, errno := unix.Syscall(unix.SYS_MLOCK, start, uintptr(pages*pageSize), 0); errno != 0 {
		return nil, fmt.Errorf("pin %d bytes at %#x: mlock: %w", len(buf), virt, errno)
	}
	runtime.KeepAlive(buf)
	frames, err := m.pm.frames(virt, pages)
	if err != nil {
		return nil, fmt.Errorf("pin %d bytes at %#x: %w", len(buf), virt, err)
	}
	k := pinKey{unsafe.Pointer(unsafe.SliceData(buf)), len(buf)}
	m.mu.Lock()
	if e := m.pinned[k]; e != nil {
		e.count++
	} else {
		m.pinned[k] = &pinEntry{buf: buf, count: 1}
	}
	m.mu.Unlock()
	return segments(virt, len(buf), frames), nil
}

// Unpin undoes one Pin of the same slice.
func (m *Memory) Unpin(buf []byte) error {
	if len(buf) == 0 {
		return fmt.Errorf("unpin: %w", kernel.ErrZeroLength)
	}
	k := pinKey{unsafe.Pointer(unsafe.SliceData(buf)), len(buf)}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pinned[k]
	if e == nil {
		return fmt.Errorf("unpin %d bytes at %p: %w", len(buf), k.p, kernel.ErrNotMapped)
	}
	if e.count--; e.count == 0 {
		delete(m.pinned, k)
	}
	return nil
}

// Phys translates one virtual address of this process, for diagnostics.
func (m *Memory) Phys(p unsafe.Pointer) (kernel.PhysAddr, error) {
	f, err := m.pm.frames(uintptr(p), 1)
	if err != nil {
		return 0, err
	}
	return f[0] + kernel.PhysAddr(uintptr(p)%pageSize), nil
}

// SyncForCPU is a no-op: x86 keeps PCIe DMA coherent with the CPU caches.
func (m *Memory) SyncForCPU(kernel.PhysAddr, int) {}

// SyncForDevice is a no-op for the same reason.
func (m *Memory) SyncForDevice(kernel.PhysAddr, int) {}

// DMACoherent implements kernel.CoherentDMA: always, for the reason above,
// so the DMA layer's syncs stop at their checks.
func (m *Memory) DMACoherent() bool { return true }

// FlushCache writes buf back to memory with CLFLUSH on each line and a
// fence, for a VT-d unit that does not snoop its table walks (ECAP.C=0).
func (m *Memory) FlushCache(buf []byte) { FlushCache(buf) }

// FlushCache writes buf back to memory with CLFLUSH on each line and a
// fence. It needs no privilege, so the metal platform uses it too.
func FlushCache(buf []byte) {
	if len(buf) == 0 {
		return
	}
	clflushRange(unsafe.Pointer(unsafe.SliceData(buf)), uintptr(len(buf)))
}

// Stats reports the pool: bytes owned, bytes in use, buffers pinned.
func (m *Memory) Stats() (total, inUse, pinned int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pool.total(), m.pool.inUse, len(m.pinned)
}

// Close unmaps all pool memory. Regions still in use become invalid.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, b := range m.maps {
		if err := unix.Munmap(b); err != nil {
			errs = append(errs, err)
		}
	}
	m.maps = nil
	m.pool = newPool()
	errs = append(errs, m.pm.close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory: close: %w", err)
	}
	return nil
}
