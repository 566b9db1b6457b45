package system

import (
	"errors"

	"github.com/ether9/ether9/drivers/usblegacy"
	"github.com/ether9/ether9/pci"
)

// USB host controllers firmware may drive from SMM: serial bus, USB,
// prog-if 0x20 (EHCI) and 0x30 (xHCI).
const (
	classEHCI = 0x0c0320
	classXHCI = 0x0c0330
)

// takeUSB takes an EHCI or xHCI controller from firmware, which would
// otherwise go on driving it from SMM (package usblegacy). A controller
// it cannot reach is said and left.
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
