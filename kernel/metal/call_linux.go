package metal

import (
	"errors"
	"fmt"
	"syscall"
)

// The shim's own calls (kernel/metal/shim/metal.c).
const (
	callIdent    = 0x4d00
	callDMAAlloc = 0x4d01
	callDMAFree  = 0x4d02
	callPhys     = 0x4d03
	callRSDP     = 0x4d04
	callIRQAlloc = 0x4d05
	callIRQFree  = 0x4d06

	callConsoleLine  = 0x4d09
	callConsoleRemap = 0x4d0a
	callLAPIC        = 0x4d0b

	magic = 0x6c6174656d // "metal"
)

// ErrNotMetal says the program is not running on the shim.
var ErrNotMetal = errors.New("metal: not running on the ring-0 shim")

// Running reports whether the program runs on the shim. On Linux the
// call is unknown and fails with ENOSYS.
func Running() bool {
	r, _, errno := syscall.RawSyscall(callIdent, 0, 0, 0)
	return errno == 0 && r == magic
}

func call(name string, nr, a0, a1 uintptr) (uintptr, error) {
	r, _, errno := syscall.RawSyscall(nr, a0, a1, 0)
	if errno == syscall.ENOSYS {
		return 0, fmt.Errorf("metal %s: %w", name, ErrNotMetal)
	}
	if errno != 0 {
		return 0, fmt.Errorf("metal %s: %w", name, errno)
	}
	return r, nil
}
