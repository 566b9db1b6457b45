package system

import (
	"errors"

	"github.com/ether9/ether9/drivers/usblegacy"
	"github.com/ether9/ether9/pci"
)

// USB host controllers firmware may drive from SMM: serial bus, USB,
// prog-if 0x00 (UHCI), 0x20 (EHCI) and 0x30 (xHCI).
const (
	classUHCI = 0x0c0300
	classEHCI = 0x0c0320
	classXHCI = 0x0c0330
)

// isUSB says whether f is a USB host controller firmware may hold.
func isUSB(f *pci.Function) bool {
	return f.Class == classUHCI || f.Class == classEHCI || f.Class == classXHCI
}

// takeUSB takes a UHCI, EHCI or xHCI controller from firmware, which
// would otherwise go on driving it from SMM (package usblegacy). A
// controller it cannot reach is said and left.
func (s *System) takeUSB(f *pci.Function) {
	did, err := s.handOffUSB(f)
	switch {
	case err != nil:
		s.logf("usb %v: not taken from firmware: %v", f.Addr, err)
	case did != "":
		s.logf("usb %v: %s", f.Addr, did)
	}
}

// handOffUSB runs f's hand-off with its registers decoded: firmware that
// never used a controller may leave its memory space off (QEMU's qboot
// does), and then its BAR reads nothing. Decoding is left as found.
func (s *System) handOffUSB(f *pci.Function) (did string, err error) {
	if f.Class == classUHCI {
		return usblegacy.UHCI(s.plat.Config, f.Addr) // configuration space alone
	}
	old, err := pci.SetCommand(s.plat.Config, f.Addr, pci.CmdMemory, 0)
	if err != nil {
		return "", err
	}
	if old&pci.CmdMemory == 0 {
		defer func() { err = errors.Join(err, pci.DisableMemory(s.plat.Config, f.Addr)) }()
	}
	regs, err := s.plat.MapBAR(f, 0)
	if err != nil {
		return "", err
	}
	if f.Class == classEHCI {
		return usblegacy.EHCI(s.plat.Config, f.Addr, regs, s.plat.Clock)
	}
	return usblegacy.XHCI(regs, s.plat.Clock)
}
