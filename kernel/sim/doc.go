// Package sim is the simulated machine: guest physical memory with a
// physical-address registry, a virtual clock, a flat PCI segment that
// answers config accesses from each function's ConfigSpace and dispatches
// MMIO to its device model, a VT-d unit (package vtd) that walks the tables
// the driver wrote, optionally more units with device scopes (a root
// port's hierarchy, a graphics device) beside it, interrupt lines, and the
// ACPI DMAR and MCFG tables that describe it all.
//
// Device models reach memory only through a DMAPort, which checks the
// function's bus master bit and translates every page, with the function's
// source id, through the VT-d unit whose scope holds the function. Memory can be made non-coherent for
// streaming DMA, and the VT-d unit sees table writes only once they are
// flushed when it does not snoop (ECAP.C=0), so a missing sync, flush or
// invalidation in a driver fails a test instead of passing by luck.
//
// The layout follows QEMU's q35: ECAM at 0xb0000000, the VT-d unit at
// 0xfed90000, BARs assigned by the bus from 0xc0000000 (32-bit) and
// 0x8000000000 (64-bit), RAM from 1 MiB around the 32-bit hole.
package sim
