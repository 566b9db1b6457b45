package usbfw

import (
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// xHCI register offsets in BAR0 and bits (xHCI 5.3.6, 7.1.1, 7.1.2,
// 7.2). A Supported Protocol capability comes first, so that the walk
// must follow a next pointer.
const (
	HCCPARAMS1       = 0x10
	xhciFirstCap     = 0x500 // HCCPARAMS1.xECP = 0x140 dwords
	XHCIUSBLEGSUP    = xhciFirstCap + 0x20
	XHCIUSBLEGCTLSTS = XHCIUSBLEGSUP + 4

	capProtocol = 2

	// USBLEGCTLSTS: USB SMI Enable (0), SMI on Host System Error (4),
	// on OS Ownership (13), on PCI Command (14), on BAR (15).
	XHCISMIEnables = 1<<0 | 1<<4 | 1<<13 | 1<<14 | 1<<15

	xhciBARSize = 0x10000
)

// XHCI is an xHCI function with firmware behind it.
type XHCI struct {
	hold
	cfg *sim.ConfigSpace
}

// NewXHCI returns a controller (an Intel xHCI, class 0x0c0330) as fw
// leaves it.
func NewXHCI(fw Firmware) *XHCI {
	c := &XHCI{cfg: sim.NewConfigSpace(0x8086, 0xa36d, 0x0c0330, 0)}
	c.init(fw, XHCISMIEnables)
	c.cfg.SetBAR(0, pci.BARMem64, xhciBARSize, false)
	return c
}

func (c *XHCI) Config() *sim.ConfigSpace { return c.cfg }

func (c *XHCI) MMIORead(bar int, off uint32, size int) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bar != 0 {
		return 0
	}
	var v uint32
	switch off &^ 3 {
	case HCCPARAMS1:
		v = xhciFirstCap / 4 << 16
	case xhciFirstCap:
		// Supported Protocol (7.2): id 2, next 0x20 bytes on (8 dwords).
		v = capProtocol | 8<<8
		if c.fw.NoLegacy {
			v = capProtocol
		}
	case XHCIUSBLEGSUP:
		if !c.fw.NoLegacy {
			v = c.readSup()
		}
	case XHCIUSBLEGCTLSTS:
		if !c.fw.NoLegacy {
			v = c.ctl
		}
	}
	return uint64(v) // an 8-byte read's upper half holds nothing modelled
}

func (c *XHCI) MMIOWrite(bar int, off uint32, size int, v uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bar != 0 || c.fw.NoLegacy {
		return
	}
	switch off &^ 3 {
	case XHCIUSBLEGSUP:
		c.writeSup(uint32(v), 0xffffffff)
	case XHCIUSBLEGCTLSTS:
		c.writeCtl(uint32(v), 0xffffffff)
	}
}
