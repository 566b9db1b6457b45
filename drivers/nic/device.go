package nic

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// Device is everything a driver's probe receives: the function it drives,
// its register window, its DMA domain and the platform's services. The same
// value is built on every platform, so a driver cannot tell them apart.
type Device struct {
	Name   string        // "ether0"
	Func   *pci.Function // ids, BARs, capabilities
	Config pci.Config    // to set bus master and read capabilities
	Regs   kernel.Regs   // BAR0
	DMA    kernel.DMA
	Clock  kernel.Clock
	IRQ    kernel.Waiter
	Logf   func(format string, args ...any)
}

// Check is the first step of every driver's probe: a device without its
// function, register window, DMA or clock cannot be driven. family
// ("igb") begins the error.
func (dev *Device) Check(family string) error {
	if dev == nil || dev.Func == nil {
		return fmt.Errorf("%s: probe without a PCI function", family)
	}
	if dev.Regs == nil || dev.DMA == nil || dev.Clock == nil {
		return fmt.Errorf("%s %s: device lacks registers, DMA or clock", family, dev.Name)
	}
	return nil
}

// Log is the device's log line writer, one that drops lines when the
// platform gave none.
func (dev *Device) Log() func(format string, args ...any) {
	if dev.Logf == nil {
		return func(string, ...any) {}
	}
	return dev.Logf
}

// AsNIC is a driver's Probe over its own probe: a failed probe returns a
// nil NIC, never a typed nil pointer inside the interface.
func AsNIC[D NIC](d D, err error) (NIC, error) {
	if err != nil {
		return nil, err
	}
	return d, nil
}
