package system_test

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/usbfw"
	"github.com/ether9/ether9/pci"
)

// On a platform where only firmware ran before, an xHCI controller
// firmware drives from SMM is taken from it at bring-up, its SMIs off,
// and the console says so; where a kernel runs beneath (not
// AfterFirmware), the controller is that kernel's and left alone.
func TestUSBTakenFromFirmware(t *testing.T) {
	for _, beneath := range []bool{false, true} {
		ctl := usbfw.NewXHCI(usbfw.Firmware{Owned: true, ReleaseAfter: 3})
		_, _, con := vectorMachineWith(t, vectorConfig{devices: map[pci.Addr]sim.Device{{Dev: 0x14}: ctl}, beneathKernel: beneath})
		bios, os, smis := ctl.Owners()
		said := strings.Contains(con.String(), "usb 00:14.0: taken from firmware in 3ms, its SMIs off")
		if !beneath && (bios || !os || smis != 0 || !said) {
			t.Errorf("after firmware: BIOS owned %v, OS owned %v, SMI enables %#x, said %v:\n%s", bios, os, smis, said, con)
		}
		if beneath && (!bios || os || smis == 0 || strings.Contains(con.String(), "usb ")) {
			t.Errorf("beneath a kernel: BIOS owned %v, OS owned %v, SMI enables %#x:\n%s", bios, os, smis, con)
		}
	}
}
