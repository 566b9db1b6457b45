package usblegacy

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
)

// xHCI registers and bits (xHCI 5.3.6, 7.1).
const (
	xhciHCCPARAMS1 = 0x10
	xecpShift      = 16 // HCCPARAMS1 31:16: the first extended capability, in dwords

	// USBLEGCTLSTS: USB SMI Enable (0), SMI on Host System Error (4),
	// on OS Ownership (13), on PCI Command (14), on BAR (15).
	xhciSMIEnables = 1<<0 | 1<<4 | 1<<13 | 1<<14 | 1<<15
)

// XHCI claims the xHCI controller behind regs (its BAR0) and turns
// firmware's SMIs off. It says what it did; "" when the controller has no
// Legacy Support capability (firmware never drives it).
func XHCI(regs kernel.Regs, clock kernel.Clock) (string, error) {
	off, err := xhciLegacyCap(regs)
	if err != nil || off == 0 {
		return "", err
	}
	return take(mmio{regs}, off, xhciSMIEnables, clock), nil
}

// xhciLegacyCap finds USB Legacy Support in the extended capability list
// (7.0), each entry's next pointer counting dwords from itself; 0 when
// there is none.
func xhciLegacyCap(regs kernel.Regs) (uint32, error) {
	off := regs.Read32(xhciHCCPARAMS1) >> xecpShift * 4
	for range maxCaps {
		if off == 0 {
			return 0, nil
		}
		v := regs.Read32(off)
		if v == 0xffffffff {
			return 0, fmt.Errorf("xhci: extended capability at %#x reads all ones: the controller does not answer", off)
		}
		if v&0xff == capLegacy {
			return off, nil
		}
		next := v >> 8 & 0xff
		if next == 0 {
			return 0, nil
		}
		off += next * 4
	}
	return 0, fmt.Errorf("xhci: more than %d extended capabilities: the list loops", maxCaps)
}

// mmio reaches the capability through the controller's register window.
type mmio struct{ regs kernel.Regs }

func (m mmio) read(off uint32) uint32 { return m.regs.Read32(off) }
func (m mmio) write(off, v uint32)    { m.regs.Write32(off, v) }
