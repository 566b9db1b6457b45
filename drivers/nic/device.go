package nic

import (
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
