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
	// IRQ is the function's one interrupt (INTx, or an MSI), which a
	// driver without Vectors waits on.
	IRQ kernel.Waiter
	// Vectors are the function's MSI-X vectors, when the platform has
	// them and the driver asked for them (probe.Driver.Vectors): MSI-X
	// is enabled, table entry i sends Vectors[i]'s message, and INTx
	// and MSI are off. They stay the function's after the driver closes.
	Vectors []kernel.MSI
	Logf    func(format string, args ...any)
	// Queues bounds the queue pairs a multi-queue driver brings up; 0
	// leaves it to the driver (as many as the part has, up to its own
	// limit).
	Queues int
}

// QueuePairs is how many of a part's n queue pairs a driver brings up:
// n, or fewer if the platform asked for fewer; never less than one.
func (dev *Device) QueuePairs(n int) int {
	if dev.Queues > 0 {
		n = min(n, dev.Queues)
	}
	return max(n, 1)
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
