package usblegacy

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/xhcifw"
	"github.com/ether9/ether9/pci"
)

// The hand-off against the firmware model: a BIOS that lets go when
// asked, one that takes its time, one that never does (its semaphore is
// cleared for it after Timeout), one that never owned the controller,
// and a controller with no Legacy Support capability at all. Each ends
// with the OS owning the controller and firmware's SMIs off.
func TestXHCI(t *testing.T) {
	for _, c := range []struct {
		name string
		fw   xhcifw.Firmware
		says string
	}{
		{"lets go", xhcifw.Firmware{Owned: true}, "taken from firmware in 0s, its SMIs off (USBLEGCTLSTS 0x2000e011)"},
		{"takes its time", xhcifw.Firmware{Owned: true, ReleaseAfter: 20}, "taken from firmware in 20ms"},
		{"never lets go", xhcifw.Firmware{Owned: true, ReleaseAfter: -1}, "firmware did not let go in 1s: taken"},
		{"never owned it", xhcifw.Firmware{}, "claimed; firmware did not own it"},
		{"no legacy support", xhcifw.Firmware{Owned: true, NoLegacy: true}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := sim.NewMachine(sim.Config{})
			a := pci.Addr{Dev: 0x14}
			ctl := xhcifw.New(c.fw)
			if err := m.Bus.Add(a, ctl); err != nil {
				t.Fatal(err)
			}
			if err := m.Bus.WriteConfig(a, 0x10, 4, 0xfe000004); err != nil { // BAR0, 64-bit memory
				t.Fatal(err)
			}
			if err := m.Bus.WriteConfig(a, 4, 2, sim.CmdMemory); err != nil {
				t.Fatal(err)
			}
			regs, err := m.Bus.Regs(a, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := XHCI(regs, m.Clock)
			if err != nil || (c.says == "" && got != "") || !strings.HasPrefix(got, c.says) {
				t.Fatalf("XHCI: %q, %v; want %q", got, err, c.says)
			}
			bios, os, smis := ctl.Owners()
			if c.fw.NoLegacy {
				return
			}
			if bios || !os || smis != 0 {
				t.Errorf("after the hand-off: BIOS owned %v, OS owned %v, SMI enables %#x", bios, os, smis)
			}
		})
	}
}
