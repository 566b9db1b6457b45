//go:build linux

package linux

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// An anonymous mapping stands in for a BAR: the accessors are the same.
func TestMMIOAccessWidths(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	m := newMMIO("test", mem)
	defer m.Close()

	m.Write32(0x10, 0xdeadbeef)
	m.Write64(0x18, 0x0123456789abcdef)
	if got := binary.LittleEndian.Uint32(mem[0x10:]); got != 0xdeadbeef {
		t.Fatalf("memory after Write32: %#x", got)
	}
	if got := m.Read64(0x18); got != 0x0123456789abcdef {
		t.Fatalf("Read64 = %#x", got)
	}
	if got := m.Read32(0x1c); got != 0x01234567 {
		t.Fatalf("Read32 of the upper half = %#x", got)
	}
	if m.Err() != nil {
		t.Fatalf("Err after valid accesses: %v", m.Err())
	}
}

func TestMMIOBadAccess(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	m := newMMIO("bar0", mem)
	defer m.Close()
	if got := m.Read32(pageSize); got != ^uint32(0) {
		t.Fatalf("read past the end = %#x, want all ones", got)
	}
	first := m.Err()
	if first == nil {
		t.Fatal("no error recorded for a read past the end")
	}
	m.Write64(0x4, 1) // misaligned: dropped
	if got := binary.LittleEndian.Uint64(mem[0:]); got != 0 {
		t.Fatalf("misaligned write reached memory: %#x", got)
	}
	if m.Err() != first {
		t.Fatalf("first error replaced: %v", m.Err())
	}
}

// A borrowed window's Close must leave the memory mapped: on the metal
// platform it is the identity map, which no one may unmap.
func TestWindowOverCloseKeepsMemory(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	w := WindowOver("identity", mem)
	w.Write32(0x20, 0x5a5aa5a5)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(mem[0x20:]); got != 0x5a5aa5a5 {
		t.Fatalf("memory after Close: %#x", got)
	}
	if got := w.Read32(0x20); got != ^uint32(0) {
		t.Fatalf("read after Close = %#x, want all ones", got)
	}
}
