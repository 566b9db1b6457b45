//go:build linux

package metal

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// Phys returns the physical address behind p: for memory the shim demand
// pages (the Go heap, mmap) it maps the page first. The shim never moves
// a page once mapped.
func Phys(p unsafe.Pointer) (uint64, error) {
	pa, err := call("phys", callPhys, uintptr(p), 0)
	return uint64(pa), err
}

// ErrNotIdentity says a physical address lies outside the shim's
// identity map, which covers the first 4 GiB and the RAM above them.
var ErrNotIdentity = errors.New("is outside the shim's identity map (the first 4 GiB and the RAM above them)")

// Window returns size bytes of physical memory at pa through the identity
// map, after checking with the shim that both ends are identity mapped.
func Window(pa uint64, size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("metal: window %#x+%#x: empty", pa, size)
	}
	for _, a := range []uint64{pa, pa + uint64(size) - 1} {
		got, err := call("phys", callPhys, uintptr(a), 0)
		if errors.Is(err, syscall.EFAULT) {
			// Above the identity map and in no mapping of ours: a BAR
			// firmware placed high in a 64-bit window, say.
			return nil, fmt.Errorf("metal: window %#x+%#x: %#x %w", pa, size, a, ErrNotIdentity)
		}
		if err != nil {
			return nil, fmt.Errorf("metal: window %#x+%#x: %w", pa, size, err)
		}
		if uint64(got) != a {
			return nil, fmt.Errorf("metal: window %#x+%#x: %#x is not identity mapped", pa, size, a)
		}
	}
	return identity(pa, size), nil
}

// identity is the slice at physical address pa. Reading the address as a
// pointer (rather than converting a uintptr) says what it is: memory
// outside the Go heap, which the garbage collector ignores.
func identity(pa uint64, size int) []byte {
	a := uintptr(pa)
	p := *(*unsafe.Pointer)(unsafe.Pointer(&a))
	return unsafe.Slice((*byte)(p), size)
}
