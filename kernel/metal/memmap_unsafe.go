//go:build linux

package metal

import (
	"runtime"
	"unsafe"

	"github.com/ether9/ether9/pci"
)

const callMemMap = 0x4d08

// MemoryMap returns the memory map the loader (PVH or Multiboot2) gave
// the shim.
func MemoryMap() ([]MemRange, error) {
	m := make([]MemRange, 128) // the shim's BOOT_MAXMEM
	n, err := call("memmap", callMemMap, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)))
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	return m[:n], nil
}

// PCIWindow is PCIHole of this machine's memory map and ECAM windows:
// where the BARs firmware left unassigned get their addresses (QEMU's
// qboot assigns none).
func PCIWindow() (*pci.MemWindow, error) {
	mem, err := MemoryMap()
	if err != nil {
		return nil, err
	}
	ecam, err := ecamWindows()
	if err != nil {
		return nil, err
	}
	return PCIHole(mem, ecam)
}
