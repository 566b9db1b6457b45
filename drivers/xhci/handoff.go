// Package xhci takes xHCI USB controllers from firmware. ether9 drives no
// USB; but firmware that emulates a legacy keyboard goes on driving the
// controller from SMM after the hand-over, each SMI stalling every CPU,
// its DMA going through memory the DMAR reserves for it, until the OS
// claims the controller through its USB Legacy Support capability
// (xHCI specification 1.2, 4.22.1 and 7.1), as Linux does at boot.
package xhci

import (
	"fmt"
	"time"

	"github.com/ether9/ether9/kernel"
)

// Registers and bits (xHCI 5.3.6, 7.1).
const (
	regHCCPARAMS1 = 0x10
	xecpShift     = 16 // HCCPARAMS1 31:16: the first extended capability, in dwords

	capLegacy = 1 // USB Legacy Support

	legBIOSOwned = 1 << 16 // USBLEGSUP: HC BIOS Owned Semaphore
	legOSOwned   = 1 << 24 // HC OS Owned Semaphore

	// USBLEGCTLSTS (at USBLEGSUP+4): the SMI enables (bits 0, 4, 13, 14,
	// 15) and the SMI events, bits 31:29, write-1-to-clear.
	legSMIEnables = 1<<0 | 1<<4 | 1<<13 | 1<<14 | 1<<15
	legSMIEvents  = 0x7 << 29

	// maxCaps bounds the walk of the capability list, which a broken
	// controller could make circular.
	maxCaps = 64
)

// Timeout is how long firmware gets to let go: Linux waits a second,
// and firmware that has not by then never will.
const Timeout = time.Second

// Handoff claims the controller behind regs (its BAR0): it sets the OS
// semaphore, waits for firmware to clear its own, or clears it after
// Timeout, and turns firmware's SMIs off. It says what it did; "" when
// the controller has no Legacy Support capability (firmware never drives
// it).
func Handoff(regs kernel.Regs, clock kernel.Clock) (string, error) {
	off, err := legacyCap(regs)
	if err != nil || off == 0 {
		return "", err
	}
	what := "claimed; firmware did not own it"
	if v := regs.Read32(off); v&legBIOSOwned != 0 {
		what = claim(regs, off, v, clock)
	} else {
		regs.Write32(off, v|legOSOwned) // so firmware does not take it later
	}
	ctl := regs.Read32(off + 4)
	regs.Write32(off+4, ctl&^legSMIEnables|legSMIEvents)
	if ctl&legSMIEnables != 0 {
		what += fmt.Sprintf(", its SMIs off (USBLEGCTLSTS %#x)", ctl)
	}
	return what, nil
}

// claim sets the OS semaphore of the capability at off (USBLEGSUP, now
// v) and waits for firmware to clear its own; after Timeout it clears it
// itself, as 4.22.1 lets software write the BIOS semaphore.
func claim(regs kernel.Regs, off, v uint32, clock kernel.Clock) string {
	regs.Write32(off, v|legOSOwned)
	start := clock.Now()
	for regs.Read32(off)&legBIOSOwned != 0 {
		if clock.Now()-start >= Timeout {
			regs.Write32(off, regs.Read32(off)&^legBIOSOwned|legOSOwned)
			return fmt.Sprintf("firmware did not let go in %v: taken", Timeout)
		}
		clock.Sleep(time.Millisecond)
	}
	return fmt.Sprintf("taken from firmware in %v", (clock.Now() - start).Round(time.Millisecond))
}

// legacyCap finds the USB Legacy Support capability's offset in the
// extended capability list (7.0); 0 when there is none.
func legacyCap(regs kernel.Regs) (uint32, error) {
	off := regs.Read32(regHCCPARAMS1) >> xecpShift * 4
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
