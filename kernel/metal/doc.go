// Package metal is the Go side of the ring-0 platform: /init running on
// the shim in kernel/metal/shim, with no Linux under it. The shim speaks
// the Linux system call ABI, so the Go runtime and golang.org/x/sys work
// unchanged; what Linux offers a driver through /dev/mem, sysfs,
// /proc/self/pagemap and hugepages, the shim offers through a few calls of
// its own (numbers from 0x4d00, which Linux lacks) and its identity map:
// every physical address below the top of RAM (at least 4 GiB) is the
// same virtual address, so a BAR, the ECAM window, an ACPI table or a DMA
// buffer is reached by its physical address.
//
// Everything runs in ring 0: port I/O needs no iopl, and nothing but the
// IOMMU (for the devices) guards memory.
package metal
