// Package xhcifw models what firmware does with an xHCI controller's USB
// Legacy Support capability (xHCI specification 1.2, 7.1): the BIOS
// owns the controller, for SMM's legacy keyboard emulation, until the
// OS asks for it and the BIOS lets go. It is written from that section
// of the specification, not from the driver (drivers/usblegacy) that takes the
// controller, so that the two can disagree; keep it apart.
//
// Only what the hand-off touches is modelled: HCCPARAMS1's pointer to the
// extended capabilities, a Supported Protocol capability first (so the
// walk must follow a next pointer), then USBLEGSUP and USBLEGCTLSTS.
package xhcifw

import (
	"sync"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// Register offsets in BAR0 and bits (xHCI 5.3.6, 7.1.1, 7.1.2, 7.2).
const (
	HCCPARAMS1   = 0x10
	firstCap     = 0x500 // where the extended capabilities start: HCCPARAMS1.xECP = 0x140 dwords
	USBLEGSUP    = firstCap + 0x20
	USBLEGCTLSTS = USBLEGSUP + 4

	capProtocol = 2
	capLegacy   = 1

	BIOSOwned = 1 << 16
	OSOwned   = 1 << 24

	// USBLEGCTLSTS: the SMI enables firmware sets, and the SMI event
	// bits 31:29, write-1-to-clear.
	SMIEnables = 1<<0 | 1<<4 | 1<<13 | 1<<14 | 1<<15
	SMIEvents  = 0x7 << 29

	barSize = 0x10000
)

// Firmware is how the BIOS behaves.
type Firmware struct {
	// Owned: the BIOS owns the controller at hand-over, its SMIs on.
	Owned bool
	// ReleaseAfter is how many reads of USBLEGSUP after the OS sets its
	// semaphore the BIOS takes to clear its own; negative: never.
	ReleaseAfter int
	// NoLegacy leaves the Legacy Support capability out, as on
	// controllers firmware never drives (QEMU's).
	NoLegacy bool
}

// Controller is an xHCI function with firmware behind it.
type Controller struct {
	cfg *sim.ConfigSpace
	fw  Firmware

	mu      sync.Mutex
	legsup  uint32
	ctlsts  uint32
	waiting int // reads since the OS asked; -1: not asked
}

// New returns a controller (an Intel xHCI, class 0x0c0330) as fw leaves
// it.
func New(fw Firmware) *Controller {
	c := &Controller{cfg: sim.NewConfigSpace(0x8086, 0xa36d, 0x0c0330, 0), fw: fw, waiting: -1}
	c.cfg.SetBAR(0, pci.BARMem64, barSize, false)
	c.legsup = capLegacy
	if fw.Owned {
		c.legsup |= BIOSOwned
		c.ctlsts = SMIEnables | 1<<29
	}
	return c
}

func (c *Controller) Config() *sim.ConfigSpace { return c.cfg }

// Owners reports the two semaphores and the SMI enables as they stand.
func (c *Controller) Owners() (bios, os bool, smis uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legsup&BIOSOwned != 0, c.legsup&OSOwned != 0, c.ctlsts & SMIEnables
}

func (c *Controller) MMIORead(bar int, off uint32, size int) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bar != 0 {
		return 0
	}
	var v uint32
	switch off &^ 3 {
	case HCCPARAMS1:
		v = firstCap / 4 << 16
	case firstCap:
		// Supported Protocol (7.2): id 2, next 0x20 bytes on (8 dwords).
		v = capProtocol | 8<<8
		if c.fw.NoLegacy {
			v = capProtocol
		}
	case USBLEGSUP:
		if c.fw.NoLegacy {
			break
		}
		if c.waiting >= 0 && c.fw.ReleaseAfter >= 0 {
			if c.waiting >= c.fw.ReleaseAfter {
				c.legsup &^= BIOSOwned
			}
			c.waiting++
		}
		v = c.legsup
	case USBLEGCTLSTS:
		if !c.fw.NoLegacy {
			v = c.ctlsts
		}
	}
	return uint64(v) // an 8-byte read's upper half holds nothing modelled
}

func (c *Controller) MMIOWrite(bar int, off uint32, size int, v uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bar != 0 || c.fw.NoLegacy {
		return
	}
	switch off &^ 3 {
	case USBLEGSUP:
		// Only the semaphores are writable; the BIOS's is software's to
		// write too (7.1.1: RW), which is how a stuck BIOS is overridden.
		c.legsup = c.legsup&^(BIOSOwned|OSOwned) | uint32(v)&(BIOSOwned|OSOwned)
		if c.legsup&OSOwned != 0 && c.waiting < 0 {
			c.waiting = 0
		}
	case USBLEGCTLSTS:
		w := uint32(v)
		c.ctlsts = c.ctlsts&^SMIEnables | w&SMIEnables
		c.ctlsts &^= w & SMIEvents
	}
}
