// Package usbfw models what firmware does with a USB host controller's
// USB Legacy Support capability: the BIOS owns the controller, for SMM's
// legacy keyboard emulation, until the OS asks for it and the BIOS lets
// go. An xHCI controller keeps the capability in its register window
// (xHCI 1.2, 7.1), an EHCI controller in PCI configuration space (EHCI
// 1.0, 2.1.7 and 2.1.8); a UHCI controller has no capability, only the
// SMI and trap enables of its LEGSUP register (Intel's ICH datasheets).
// It is written from those sections of the specifications, not from the
// driver (drivers/usblegacy) that takes the controllers, so that the two
// can disagree; keep it apart.
//
// Only what the hand-off touches is modelled: where the capability is
// found, USBLEGSUP and USBLEGCTLSTS.
package usbfw

import "sync"

// USBLEGSUP and USBLEGCTLSTS, alike in both controllers.
const (
	capLegacy = 1

	BIOSOwned = 1 << 16
	OSOwned   = 1 << 24

	// USBLEGCTLSTS bits 31:29: SMI events, write-1-to-clear.
	SMIEvents = 0x7 << 29
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

// hold is firmware's hold on one controller: the two registers and how
// far the BIOS is from letting go. Its methods run under mu.
type hold struct {
	mu         sync.Mutex
	fw         Firmware
	smiEnables uint32 // the USBLEGCTLSTS bits that enable SMIs, which differ by kind
	sup, ctl   uint32
	waiting    int // reads since the OS asked; -1: not asked
}

// init sets the hold as fw leaves it.
func (h *hold) init(fw Firmware, smiEnables uint32) {
	h.fw, h.smiEnables, h.sup, h.waiting = fw, smiEnables, capLegacy, -1
	if fw.Owned {
		h.sup |= BIOSOwned
		h.ctl = smiEnables | 1<<29 // and an ownership-change SMI pending
	}
}

// Owners reports the two semaphores and the SMI enables as they stand.
func (h *hold) Owners() (bios, os bool, smis uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sup&BIOSOwned != 0, h.sup&OSOwned != 0, h.ctl & h.smiEnables
}

// readSup is a read of USBLEGSUP: once the OS has asked, the BIOS lets go
// after ReleaseAfter of them.
func (h *hold) readSup() uint32 {
	if h.waiting >= 0 && h.fw.ReleaseAfter >= 0 {
		if h.waiting >= h.fw.ReleaseAfter {
			h.sup &^= BIOSOwned
		}
		h.waiting++
	}
	return h.sup
}

// writeSup writes the bytes of v that bytes (a mask) covers. Only the
// semaphores are writable; the BIOS's is software's to write too (RW in
// both specifications), which is how a stuck BIOS is overridden.
func (h *hold) writeSup(v, bytes uint32) {
	h.sup = apply(h.sup, v, bytes, BIOSOwned|OSOwned, 0)
	if h.sup&OSOwned != 0 && h.waiting < 0 {
		h.waiting = 0
	}
}

// writeCtl writes USBLEGCTLSTS: the enables as written, the events
// cleared where v has ones.
func (h *hold) writeCtl(v, bytes uint32) {
	h.ctl = apply(h.ctl, v, bytes, h.smiEnables, SMIEvents)
}

// written is the part of a configuration write (size bytes of v at off)
// that lands in the register at reg, n bytes wide: its bytes in place,
// and a mask of the bytes written (0: none of them).
func written(off, size int, v uint32, reg, n int) (val, bytes uint32) {
	for i := range size {
		o := off + i - reg
		if o < 0 || o >= n {
			continue
		}
		val |= (v >> (8 * i) & 0xff) << (8 * o)
		bytes |= 0xff << (8 * o)
	}
	return val, bytes
}

// apply is a write of val, in the bytes bytes covers, to a register
// holding reg: the bits of rw take what is written, those of w1c clear
// where it has ones, the rest stay.
func apply(reg, val, bytes, rw, w1c uint32) uint32 {
	m := rw & bytes
	return (reg&^m | val&m) &^ (val & bytes & w1c)
}
