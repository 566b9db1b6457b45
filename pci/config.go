package pci

import (
	"errors"
	"fmt"
)

var (
	// ErrAbsent means no function answers at an address: its vendor id
	// reads all ones (or, on some chipsets, all zeros).
	ErrAbsent = errors.New("no function")
	// ErrOutOfRange means the accessor cannot reach an address: a register
	// beyond 0xff through the legacy ports, a bus outside every ECAM window,
	// a sysfs config file shorter than the offset.
	ErrOutOfRange = errors.New("out of reach of this config accessor")
	// ErrBadAccess is a malformed access: a size other than 1, 2 or 4, an
	// offset not aligned to it, a device number above 31 or function above 7.
	ErrBadAccess = errors.New("bad config access")
)

// checkAccess validates one access of size bytes at off for an accessor
// that reaches limit bytes of configuration space per function.
func checkAccess(a Addr, off, size, limit int) error {
	if a.Dev > 31 || a.Fn > 7 {
		return fmt.Errorf("pci %v: %w: device %d function %d", a, ErrBadAccess, a.Dev, a.Fn)
	}
	switch size {
	case 1, 2, 4:
	default:
		return fmt.Errorf("pci %v: %w: size %d", a, ErrBadAccess, size)
	}
	if off < 0 || off%size != 0 {
		return fmt.Errorf("pci %v: %w: offset %#x not aligned to %d", a, ErrBadAccess, off, size)
	}
	if off+size > limit {
		return fmt.Errorf("pci %v: offset %#x: %w (limit %#x)", a, off, ErrOutOfRange, limit)
	}
	return nil
}

// sizeMask is the all-ones value of an access of size bytes: what an
// absent function returns.
func sizeMask(size int) uint32 {
	return uint32(uint64(1)<<(8*size) - 1)
}

func read8(c Config, a Addr, off int) (uint8, error) {
	v, err := c.ReadConfig(a, off, 1)
	return uint8(v), err
}

func read16(c Config, a Addr, off int) (uint16, error) {
	v, err := c.ReadConfig(a, off, 2)
	return uint16(v), err
}

func read32(c Config, a Addr, off int) (uint32, error) {
	return c.ReadConfig(a, off, 4)
}

// absentID reports whether a vendor/device dword means nothing is there.
// All ones is the master abort of a missing function; some chipsets return
// zeros or half of either for an empty slot.
func absentID(v uint32) bool {
	return v == 0xffffffff || v == 0 || v == 0x0000ffff || v == 0xffff0000
}
