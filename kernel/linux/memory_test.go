//go:build linux

package linux

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/kernel"
)

var (
	_ kernel.Memory      = (*Memory)(nil)
	_ kernel.CoherentDMA = (*Memory)(nil)
)

// newTestMemory needs what PID 1 has: root, for mlockall of everything and
// for frame numbers in /proc/self/pagemap.
func newTestMemory(t *testing.T) *Memory {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: physical addresses in /proc/self/pagemap")
	}
	m, err := NewMemory(MemoryOptions{SmallChunk: 64 << 10})
	if err != nil {
		t.Skipf("platform memory unavailable here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestMemoryAllocIsContiguous(t *testing.T) {
	m := newTestMemory(t)
	r, err := m.Alloc(3000, pageSize)
	if err != nil {
		t.Fatal(err)
	}
	if r.Phys%pageSize != 0 {
		t.Fatalf("region at %#x not page aligned", r.Phys)
	}
	p, err := m.Phys(unsafe.Pointer(&r.Buf[len(r.Buf)-1]))
	if err != nil {
		t.Fatal(err)
	}
	if p != r.Phys+kernel.PhysAddr(len(r.Buf)-1) {
		t.Fatalf("last byte at %#x, want %#x: region not contiguous", p, r.Phys+kernel.PhysAddr(len(r.Buf)-1))
	}
	if err := m.Free(r); err != nil {
		t.Fatal(err)
	}
	if err := m.Free(r); err == nil {
		t.Fatal("double free accepted")
	}
}

func TestMemoryAllocRejects(t *testing.T) {
	m := newTestMemory(t)
	for _, c := range []struct{ size, align int }{{0, 1}, {64, 3}, {4 << 20, 1}} {
		if _, err := m.Alloc(c.size, c.align); err == nil {
			t.Errorf("Alloc(%d, %d) succeeded", c.size, c.align)
		}
	}
}

func TestMemoryPinHeapBuffer(t *testing.T) {
	m := newTestMemory(t)
	buf := make([]byte, 3*pageSize)
	b := buf[100 : 100+2*pageSize]
	segs, err := m.Pin(b)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range segs {
		total += s.Len
	}
	if total != len(b) {
		t.Fatalf("segments cover %d bytes, want %d", total, len(b))
	}
	first, err := m.Phys(unsafe.Pointer(&b[0]))
	if err != nil {
		t.Fatal(err)
	}
	if segs[0].Phys != first {
		t.Fatalf("first segment at %#x, pagemap says %#x", segs[0].Phys, first)
	}
	if _, _, pinned := m.Stats(); pinned != 1 {
		t.Fatalf("%d buffers pinned, want 1", pinned)
	}
	if err := m.Unpin(b); err != nil {
		t.Fatal(err)
	}
	if err := m.Unpin(b); err == nil {
		t.Fatal("unpin of a buffer no longer pinned accepted")
	}
}

func TestFlushCacheKeepsData(t *testing.T) {
	m := newTestMemory(t)
	buf := make([]byte, 1000)
	for i := range buf {
		buf[i] = byte(i)
	}
	m.FlushCache(buf[3:]) // unaligned start: the line containing it is flushed too
	for i := range buf {
		if buf[i] != byte(i) {
			t.Fatalf("byte %d changed by the flush", i)
		}
	}
}

// Under MCL_ONFAULT a page nobody touched is not resident; Pin must fault
// it in rather than report it absent (fresh heap spans are such pages).
func TestMemoryPinUntouchedPages(t *testing.T) {
	m := newTestMemory(t)
	b, err := unix.Mmap(-1, 0, 3*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	segs, err := m.Pin(b[10:])
	if err != nil {
		t.Fatalf("pin of untouched pages: %v", err)
	}
	n := 0
	for _, s := range segs {
		if s.Phys == 0 {
			t.Fatalf("segment at physical 0: %v", segs)
		}
		n += s.Len
	}
	if n != len(b)-10 {
		t.Fatalf("segments cover %d bytes, want %d", n, len(b)-10)
	}
	if err := m.Unpin(b[10:]); err != nil {
		t.Fatal(err)
	}
}
