package usblegacy

import (
	"fmt"

	"github.com/ether9/ether9/pci"
)

// UHCI's legacy support register, LEGSUP, 16 bits at 0xC0 of
// configuration space (Intel ICH datasheets, the UHCI controllers' LEGSUP;
// the UHCI specification leaves it to the chipset). There is no
// semaphore: firmware's hold is the SMI and trap enables it sets, and the
// OS takes the controller by clearing them.
const (
	uhciLEGSUP = 0xc0

	// Read-only: SMI caused by USB interrupt (12), pass-through state
	// (6), and the reserved bit 14.
	uhciLegRO = 1<<14 | 1<<12 | 1<<6
	// Write-1-to-clear: SMI caused by end of pass-through (15) and by
	// port 64h/60h writes and reads (11:8).
	uhciLegRWC = 1<<15 | 0xf<<8
)

// UHCI takes the UHCI controller at a from firmware: when LEGSUP has any
// enable set (the SMI on USB interrupt, the port 60h/64h traps of legacy
// keyboard emulation, A20 pass-through, the PCI interrupt) or an SMI
// pending, it writes the write-1-to-clear bits and zero elsewhere, which
// clears the pending ones and turns every enable off. It says what it
// did; "" when firmware held nothing.
func UHCI(cfg pci.Config, a pci.Addr) (string, error) {
	v, err := cfg.ReadConfig(a, uhciLEGSUP, 2)
	if err != nil {
		return "", fmt.Errorf("uhci: LEGSUP: %w", err)
	}
	if v == 0xffff {
		return "", fmt.Errorf("uhci: LEGSUP reads all ones: the controller does not answer")
	}
	if v&^uhciLegRO == 0 {
		return "", nil
	}
	if err := cfg.WriteConfig(a, uhciLEGSUP, 2, uhciLegRWC); err != nil {
		return "", fmt.Errorf("uhci: LEGSUP: %w", err)
	}
	return fmt.Sprintf("taken from firmware, its SMIs and port 60h/64h traps off (LEGSUP %#x)", v), nil
}
