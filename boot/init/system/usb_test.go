package system_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel/sim/xhcifw"
	"github.com/ether9/ether9/ns/admin"
	"github.com/ether9/ether9/pci"
)

// On a platform where only firmware ran before, an xHCI controller
// firmware drives from SMM is taken from it at bring-up, its SMIs off,
// and the console says so; where a kernel runs beneath (not
// AfterFirmware), the controller is that kernel's and left alone.
func TestUSBTakenFromFirmware(t *testing.T) {
	for _, after := range []bool{true, false} {
		h, err := simmachine.New(context.Background(), simmachine.Config{NICs: []string{"igb"}})
		if err != nil {
			t.Fatal(err)
		}
		usb := pci.Addr{Dev: 0x14}
		ctl := xhcifw.New(xhcifw.Firmware{Owned: true, ReleaseAfter: 3})
		if err := h.Machine.Bus.Add(usb, ctl); err != nil {
			t.Fatal(err)
		}
		plat := simmachine.Platform(h.Machine)
		plat.AfterFirmware = after
		opt := simmachine.Options(1)
		if opt.Token, err = admin.ParseToken(testToken); err != nil {
			t.Fatal(err)
		}
		con := &lines{}
		sys, err := system.Start(h.Context(), plat, opt, con.logf)
		if err != nil {
			h.Close()
			t.Fatalf("start: %v\n%s", err, con)
		}
		h.System = sys
		bios, os, smis := ctl.Owners()
		said := strings.Contains(con.String(), "usb 00:14.0: taken from firmware in 3ms, its SMIs off")
		h.Close()
		if after && (bios || !os || smis != 0 || !said) {
			t.Errorf("after firmware: BIOS owned %v, OS owned %v, SMI enables %#x, said %v:\n%s", bios, os, smis, said, con)
		}
		if !after && (!bios || os || smis == 0 || strings.Contains(con.String(), "usb ")) {
			t.Errorf("beneath a kernel: BIOS owned %v, OS owned %v, SMI enables %#x:\n%s", bios, os, smis, con)
		}
	}
}
