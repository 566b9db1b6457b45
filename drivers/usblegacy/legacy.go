// Package usblegacy takes USB host controllers from firmware. ether9
// drives no USB; but firmware that emulates a legacy keyboard goes on
// driving a controller from SMM after the hand-over, each SMI stalling
// every CPU, its DMA going through memory the DMAR reserves for it, until
// the OS claims the controller, as Linux does at boot. xHCI and EHCI have
// a USB Legacy Support capability, in the register window (xHCI 1.2,
// 4.22.1 and 7.1) or in PCI configuration space (EHCI 1.0, 2.1.7 and
// 5.1); the semaphores and the SMI controls behind it are the same, and
// so is the claim here. UHCI has only the SMI and trap enables of its
// LEGSUP register (uhci.go).
package usblegacy

import (
	"fmt"
	"time"

	"github.com/ether9/ether9/kernel"
)

// USBLEGSUP and USBLEGCTLSTS (at USBLEGSUP+4), alike in both.
const (
	capLegacy = 1 // the capability id of USB Legacy Support

	legBIOSOwned = 1 << 16 // USBLEGSUP: HC BIOS Owned Semaphore
	legOSOwned   = 1 << 24 // HC OS Owned Semaphore

	// USBLEGCTLSTS bits 31:29 are the SMI events on a BAR write, a
	// command register write and an ownership change, write-1-to-clear
	// in both; which low bits enable SMIs differs.
	legSMIEvents = 0x7 << 29

	// maxCaps bounds the walk of a capability list, which a broken
	// controller could make circular.
	maxCaps = 64
)

// Timeout is how long firmware gets to let go: Linux waits a second,
// and firmware that has not by then never will.
const Timeout = time.Second

// dwords is where a controller's Legacy Support capability is read and
// written: its register window or its configuration space.
type dwords interface {
	read(off uint32) uint32
	write(off, v uint32)
}

// take claims the controller whose USBLEGSUP is at off: it sets the OS
// semaphore, waits for firmware to clear its own or clears it after
// Timeout, and turns off the SMIs smiEnables names in USBLEGCTLSTS. It
// says what it did.
func take(d dwords, off, smiEnables uint32, clock kernel.Clock) string {
	what := "claimed; firmware did not own it"
	if v := d.read(off); v&legBIOSOwned != 0 {
		what = claim(d, off, v, clock)
	} else {
		d.write(off, v|legOSOwned) // so firmware does not take it later
	}
	ctl := d.read(off + 4)
	d.write(off+4, ctl&^smiEnables|legSMIEvents)
	if ctl&smiEnables != 0 {
		what += fmt.Sprintf(", its SMIs off (USBLEGCTLSTS %#x)", ctl)
	}
	return what
}

// claim sets the OS semaphore of the capability at off (USBLEGSUP, now
// v) and waits for firmware to clear its own; after Timeout it clears it
// itself, as both specifications let software write the BIOS semaphore.
func claim(d dwords, off, v uint32, clock kernel.Clock) string {
	d.write(off, v|legOSOwned)
	start := clock.Now()
	for d.read(off)&legBIOSOwned != 0 {
		if clock.Now()-start >= Timeout {
			d.write(off, d.read(off)&^legBIOSOwned|legOSOwned)
			return fmt.Sprintf("firmware did not let go in %v: taken", Timeout)
		}
		clock.Sleep(time.Millisecond)
	}
	return fmt.Sprintf("taken from firmware in %v", (clock.Now() - start).Round(time.Millisecond))
}
