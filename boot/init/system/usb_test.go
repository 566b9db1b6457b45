package system_test

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/usbfw"
	"github.com/ether9/ether9/pci"
)

// On a platform where only firmware ran before, the xHCI, EHCI and UHCI
// controllers firmware drives from SMM are taken from it at bring-up,
// their SMIs off, and the console says so; where a kernel runs beneath
// (not AfterFirmware), the controllers are that kernel's and left alone.
func TestUSBTakenFromFirmware(t *testing.T) {
	for _, beneath := range []bool{false, true} {
		fw := usbfw.Firmware{Owned: true, ReleaseAfter: 3}
		ctls := map[pci.Addr]interface {
			sim.Device
			Owners() (bios, os bool, smis uint32)
		}{{Dev: 0x14}: usbfw.NewXHCI(fw), {Dev: 0x1d}: usbfw.NewEHCI(fw)}
		uhci := usbfw.NewUHCI(usbfw.UHCIFirmwareLEGSUP)
		devices := map[pci.Addr]sim.Device{{Dev: 0x1a}: uhci}
		for a, c := range ctls {
			devices[a] = c
		}
		_, _, con := vectorMachineWith(t, vectorConfig{devices: devices, beneathKernel: beneath})
		said := strings.Contains(con.String(), "usb 00:1a.0: taken from firmware, its SMIs and port 60h/64h traps off (LEGSUP 0x213f)")
		if l := uhci.LEGSUP(); !beneath && (l != 0 || !said) || beneath && l != usbfw.UHCIFirmwareLEGSUP {
			t.Errorf("UHCI beneath a kernel %v: LEGSUP %#x, said %v:\n%s", beneath, l, said, con)
		}
		for a, ctl := range ctls {
			bios, os, smis := ctl.Owners()
			said := strings.Contains(con.String(), "usb "+a.String()+": taken from firmware in 3ms, its SMIs off")
			if !beneath && (bios || !os || smis != 0 || !said) {
				t.Errorf("%v after firmware: BIOS owned %v, OS owned %v, SMI enables %#x, said %v:\n%s", a, bios, os, smis, said, con)
			}
			if beneath && (!bios || os || smis == 0 || strings.Contains(con.String(), "usb ")) {
				t.Errorf("%v beneath a kernel: BIOS owned %v, OS owned %v, SMI enables %#x:\n%s", a, bios, os, smis, con)
			}
		}
	}
}

// A controller firmware never used may have its memory space off (QEMU's
// qboot leaves it so): the hand-off turns decoding on to reach the
// registers, claims the controller, and leaves decoding as it found it.
func TestUSBUndecoded(t *testing.T) {
	ctls := map[pci.Addr]sim.Device{{Dev: 0x14}: usbfw.NewXHCI(usbfw.Firmware{}), {Dev: 0x1d}: usbfw.NewEHCI(usbfw.Firmware{})}
	h, _, con := vectorMachineWith(t, vectorConfig{undecoded: ctls})
	for a := range ctls {
		if !strings.Contains(con.String(), "usb "+a.String()+": claimed; firmware did not own it") {
			t.Errorf("%v: no claim said:\n%s", a, con)
		}
		if cmd, err := h.Machine.Bus.ReadConfig(a, 4, 2); err != nil || cmd&sim.CmdMemory != 0 {
			t.Errorf("%v: command %#x, %v after the hand-off; want memory space off again", a, cmd, err)
		}
	}
}
