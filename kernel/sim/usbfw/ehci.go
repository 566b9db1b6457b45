package usbfw

import (
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// EHCI registers and bits (EHCI 1.0, 2.1.7, 2.1.8, 2.2.4). Intel's
// controllers put the Legacy Support capability at 0x68, alone.
const (
	HCCPARAMS        = 0x08 // in BAR0: EECP in 15:8
	EHCIUSBLEGSUP    = 0x68 // in configuration space
	EHCIUSBLEGCTLSTS = EHCIUSBLEGSUP + 4

	// USBLEGCTLSTS: USB SMI Enable and the SMIs on USB error, port
	// change, frame list rollover, host system error and async advance
	// (5:0); on OS ownership change, PCI command and BAR (15:13). Bits
	// 21:16 are read-only copies of the sources.
	EHCISMIEnables = 0x3f | 1<<13 | 1<<14 | 1<<15

	ehciBARSize = 0x400
)

// EHCI is an EHCI function with firmware behind it; its Legacy Support
// registers move under config reads (sim.ConfigReadWatcher).
type EHCI struct {
	hold
	cfg *sim.ConfigSpace
}

// NewEHCI returns a controller (an Intel EHCI, class 0x0c0320) as fw
// leaves it.
func NewEHCI(fw Firmware) *EHCI {
	c := &EHCI{cfg: sim.NewConfigSpace(0x8086, 0x8c26, 0x0c0320, 0)}
	c.init(fw, EHCISMIEnables)
	c.cfg.SetBAR(0, pci.BARMem32, ehciBARSize, false)
	if !fw.NoLegacy {
		c.publish()
	}
	return c
}

func (c *EHCI) Config() *sim.ConfigSpace { return c.cfg }

// publish puts the two registers where configuration reads find them.
func (c *EHCI) publish() {
	_ = c.cfg.Poke(EHCIUSBLEGSUP, 4, c.sup)
	_ = c.cfg.Poke(EHCIUSBLEGCTLSTS, 4, c.ctl)
}

// ConfigRead lets a read of USBLEGSUP count towards the BIOS letting go.
func (c *EHCI) ConfigRead(off, size int) {
	if c.fw.NoLegacy || off >= EHCIUSBLEGSUP+4 || off+size <= EHCIUSBLEGSUP {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readSup()
	c.publish()
}

// ConfigWritten applies a write of any width to the two registers: the
// config space keeps them read-only, so the bytes written arrive here.
func (c *EHCI) ConfigWritten(off, size int, v uint32) {
	if c.fw.NoLegacy {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if val, bytes := written(off, size, v, EHCIUSBLEGSUP, 4); bytes != 0 {
		c.writeSup(val, bytes)
	}
	if val, bytes := written(off, size, v, EHCIUSBLEGCTLSTS, 4); bytes != 0 {
		c.writeCtl(val, bytes)
	}
	c.publish()
}

// MMIORead answers the capability registers the hand-off reads:
// HCCPARAMS names the capability's config offset (EECP).
func (c *EHCI) MMIORead(bar int, off uint32, size int) uint64 {
	if bar != 0 {
		return 0
	}
	switch off &^ 3 {
	case 0:
		return 0x0100_0020 // HCIVERSION 1.0, CAPLENGTH 0x20
	case HCCPARAMS:
		v := uint32(0x81) // 64-bit addressing, isochronous threshold 8
		if !c.fw.NoLegacy {
			v |= EHCIUSBLEGSUP << 8
		}
		return uint64(v)
	}
	return 0
}

func (c *EHCI) MMIOWrite(bar int, off uint32, size int, v uint64) {}
