package usblegacy

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// EHCI registers and bits (EHCI 1.0, 2.1.7, 2.1.8, 2.2.4).
const (
	ehciHCCPARAMS = 0x08 // in the capability registers, at the start of BAR0
	eecpShift     = 8    // HCCPARAMS 15:8: the first extended capability's config offset

	// Extended capabilities live in the device-specific part of
	// configuration space: an EECP below 0x40 points nowhere.
	eecpMin = 0x40

	// USBLEGCTLSTS: USB SMI Enable and the SMIs on USB error, port
	// change, frame list rollover, host system error and async advance
	// (5:0); on OS ownership change, PCI command and BAR writes (15:13).
	ehciSMIEnables = 0x3f | 1<<13 | 1<<14 | 1<<15
)

// EHCI claims the EHCI controller at a, whose register window regs (BAR0)
// says where in its configuration space the Legacy Support capability
// is, and turns firmware's SMIs off. It says what it did; "" when the
// controller has no such capability.
func EHCI(cfg pci.Config, a pci.Addr, regs kernel.Regs, clock kernel.Clock) (string, error) {
	c := &config{cfg: cfg, a: a}
	off, err := ehciLegacyCap(regs, c)
	if err != nil || off == 0 {
		return "", err
	}
	what := take(c, off, ehciSMIEnables, clock)
	if c.err != nil {
		return "", c.err
	}
	return what, nil
}

// ehciLegacyCap finds USB Legacy Support among the extended capabilities
// in configuration space, each naming the next one's offset; 0 when there
// is none.
func ehciLegacyCap(regs kernel.Regs, c *config) (uint32, error) {
	hcc := regs.Read32(ehciHCCPARAMS)
	if hcc == 0xffffffff {
		return 0, fmt.Errorf("ehci: HCCPARAMS reads all ones: the controller does not answer")
	}
	off := hcc >> eecpShift & 0xff
	for range maxCaps {
		if off == 0 {
			return 0, nil
		}
		if off < eecpMin || off%4 != 0 {
			return 0, fmt.Errorf("ehci: extended capability pointer %#x is not in the device's part of config space", off)
		}
		v := c.read(off)
		if c.err != nil {
			return 0, c.err
		}
		if v&0xff == capLegacy {
			return off, nil
		}
		off = v >> 8 & 0xff
	}
	return 0, fmt.Errorf("ehci: more than %d extended capabilities: the list loops", maxCaps)
}

// config reaches the capability through configuration space. The first
// access to fail is kept; after it reads give 0, so that no wait goes on
// for a semaphore that cannot be read.
type config struct {
	cfg pci.Config
	a   pci.Addr
	err error
}

func (c *config) read(off uint32) uint32 {
	if c.err != nil {
		return 0
	}
	v, err := c.cfg.ReadConfig(c.a, int(off), 4)
	if err != nil {
		c.err = fmt.Errorf("ehci: legacy support at %#x: %w", off, err)
		return 0
	}
	return v
}

func (c *config) write(off, v uint32) {
	if c.err != nil {
		return
	}
	if err := c.cfg.WriteConfig(c.a, int(off), 4, v); err != nil {
		c.err = fmt.Errorf("ehci: legacy support at %#x: %w", off, err)
	}
}
