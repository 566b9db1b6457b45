// Package pci enumerates PCI functions through a config-space accessor,
// decodes and sizes their BARs, walks their capabilities, and matches them
// to drivers by vendor and device id.
package pci

import "fmt"

// Addr is a function's address: segment, bus, device, function.
type Addr struct {
	Seg uint16
	Bus uint8
	Dev uint8 // 0..31
	Fn  uint8 // 0..7
}

func (a Addr) String() string {
	if a.Seg != 0 {
		return fmt.Sprintf("%04x:%02x:%02x.%x", a.Seg, a.Bus, a.Dev, a.Fn)
	}
	return fmt.Sprintf("%02x:%02x.%x", a.Bus, a.Dev, a.Fn)
}

// Config reads and writes configuration space. size is 1, 2 or 4 and off
// is aligned to it. Implementations: legacy ports 0xCF8/0xCFC, ECAM from
// the ACPI MCFG table, sysfs config files, and the simulated bus.
type Config interface {
	ReadConfig(a Addr, off, size int) (uint32, error)
	WriteConfig(a Addr, off, size int, v uint32) error
}
