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

// BARKind says what a base address register decodes.
type BARKind uint8

const (
	BARNone BARKind = iota
	BARMem32
	BARMem64
	BARIO
)

// BAR is one decoded and sized base address register. A 64-bit BAR uses
// two slots; the upper slot is reported as BARNone.
type BAR struct {
	Index        int
	Kind         BARKind
	Addr         uint64
	Size         uint64
	Prefetchable bool
	Assigned     bool // the address is ours (Options.Assign), not firmware's
}

// Capability is one entry of the capability list (standard or, with
// Extended set, PCI Express extended).
type Capability struct {
	ID       uint16
	Offset   int
	Extended bool
}

// Function is one enumerated PCI function.
type Function struct {
	Addr      Addr
	Vendor    uint16
	Device    uint16
	SubVendor uint16
	SubDevice uint16
	Class     uint32 // base class << 16 | subclass << 8 | prog-if
	Revision  uint8
	Header    uint8 // header type without the multi-function bit
	BARs      [6]BAR
	Caps      []Capability
	Driver    string // the driver bound by Match, "" if none

	// Bus numbers of a bridge (header type 1 or 2): the bus it sits on,
	// the bus behind it and the highest bus below it.
	Primary, Secondary, Subordinate uint8
}
