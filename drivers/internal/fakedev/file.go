// Package fakedev is the device a driver's unit test plays: a register
// file (File) whose registers are plain storage, each write counted, with
// the few side effects a bring-up depends on (a self-clearing reset bit,
// clear-on-read causes and statistics, an NVM or PHY answering through
// its access register) supplied by the device's tests, and an in-memory
// kernel.DMA (DMA) through whose device addresses the test reads and
// writes what the device would, which counts every operation, catches
// double unmaps and use of unmapped addresses, and fails maps on demand.
// It moves no packets; the tests play the device through the descriptor
// rings.
package fakedev

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Effects are a device's side effects. Both run with the file locked.
type Effects struct {
	// ClearOnRead reports whether reading off clears it (ICR, the
	// statistics).
	ClearOnRead func(off uint32) bool
	// Write stores v at off in r as the device would, changing any other
	// register the write acts on. Nil stores v as it is.
	Write func(r map[uint32]uint32, off, v uint32)
}

// File is the register file.
type File struct {
	mu     sync.Mutex
	r      map[uint32]uint32
	writes map[uint32]int
	fx     Effects
}

// NewFile is a file holding init, acting as fx says.
func NewFile(init map[uint32]uint32, fx Effects) *File {
	r := make(map[uint32]uint32, len(init))
	for off, v := range init {
		r[off] = v
	}
	return &File{r: r, writes: map[uint32]int{}, fx: fx}
}

// Read32 is the driver's read: what the register holds, cleared after
// if it clears on read.
func (f *File) Read32(off uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.r[off]
	if f.fx.ClearOnRead != nil && f.fx.ClearOnRead(off) {
		f.r[off] = 0
	}
	return v
}

// Write32 is the driver's write, counted and passed through the effects.
func (f *File) Write32(off, v uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes[off]++
	if f.fx.Write != nil {
		f.fx.Write(f.r, off, v)
		return
	}
	f.r[off] = v
}

// Read64 reads the low register, then the high one.
func (f *File) Read64(off uint32) uint64 {
	return uint64(f.Read32(off)) | uint64(f.Read32(off+4))<<32
}

// Write64 writes the low register, then the high one.
func (f *File) Write64(off uint32, v uint64) {
	f.Write32(off, uint32(v))
	f.Write32(off+4, uint32(v>>32))
}

// Get is what off holds, read with no side effect.
func (f *File) Get(off uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.r[off]
}

// Set puts v in off with no side effect, as the device changing its own
// register.
func (f *File) Set(off, v uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.r[off] = v
}

// Writes is how many times the driver wrote off.
func (f *File) Writes(off uint32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes[off]
}

// ReceiveAddress is what an Intel NIC loads into RAL0 and RAH0 from a
// good NVM: mac, marked valid (RAH.AV, bit 31).
func ReceiveAddress(mac [6]byte) (ral, rah uint32) {
	ral = uint32(mac[0]) | uint32(mac[1])<<8 | uint32(mac[2])<<16 | uint32(mac[3])<<24
	rah = uint32(mac[4]) | uint32(mac[5])<<8 | 1<<31
	return ral, rah
}

// Check reports every register in want that does not hold its value.
func (f *File) Check(t testing.TB, want map[uint32]uint32) {
	t.Helper()
	for _, off := range slices.Sorted(maps.Keys(want)) {
		if got := f.Get(off); got != want[off] {
			t.Errorf("register %#x = %#x, want %#x", off, got, want[off])
		}
	}
}

// Snapshot renders every register, sorted by offset, read with no side
// effect: two snapshots differ when a register changed between them.
func (f *File) Snapshot() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, off := range slices.Sorted(maps.Keys(f.r)) {
		fmt.Fprintf(&b, "%#x=%#x\n", off, f.r[off])
	}
	return b.String()
}
