//go:build linux

package linux

import "unsafe"

// Implemented in mmio_amd64.s. The register addresses are of mmap'd
// memory, never of the Go heap, so passing them as uintptr hides nothing
// from the garbage collector.

func load32(addr uintptr) uint32

func load64(addr uintptr) uint64

func store32(addr uintptr, v uint32)

func store64(addr uintptr, v uint64)

//go:noescape
func clflushRange(p unsafe.Pointer, n uintptr)
