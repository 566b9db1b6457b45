package usblegacy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/usbfw"
	"github.com/ether9/ether9/pci"
)

// controller is one kind of controller under test: its firmware model,
// and the hand-off for it.
type controller interface {
	sim.Device
	Owners() (bios, os bool, smis uint32)
}

var kinds = []struct {
	name    string
	plug    func(usbfw.Firmware) controller
	handoff func(m *sim.Machine, a pci.Addr) (string, error)
	// the SMI enables firmware leaves on, and the pending event, as the
	// hand-off reports them
	ctlsts uint32
}{
	{"xhci", func(fw usbfw.Firmware) controller { return usbfw.NewXHCI(fw) },
		func(m *sim.Machine, a pci.Addr) (string, error) {
			regs, err := m.Bus.Regs(a, 0)
			if err != nil {
				return "", err
			}
			return XHCI(regs, m.Clock)
		}, usbfw.XHCISMIEnables | 1<<29},
	{"ehci", func(fw usbfw.Firmware) controller { return usbfw.NewEHCI(fw) },
		func(m *sim.Machine, a pci.Addr) (string, error) {
			regs, err := m.Bus.Regs(a, 0)
			if err != nil {
				return "", err
			}
			return EHCI(m.Bus, a, regs, m.Clock)
		}, usbfw.EHCISMIEnables | 1<<29},
}

// The hand-off of each kind against the firmware model: a BIOS that lets
// go when asked, one that takes its time, one that never does (its
// semaphore is cleared for it after Timeout), one that never owned the
// controller, and a controller with no Legacy Support capability at all.
// Each ends with the OS owning the controller and firmware's SMIs off.
func TestHandoff(t *testing.T) {
	for _, k := range kinds {
		for _, c := range []struct {
			name string
			fw   usbfw.Firmware
			says string
		}{
			{"lets go", usbfw.Firmware{Owned: true}, fmt.Sprintf("taken from firmware in 0s, its SMIs off (USBLEGCTLSTS %#x)", k.ctlsts)},
			{"takes its time", usbfw.Firmware{Owned: true, ReleaseAfter: 20}, "taken from firmware in 20ms"},
			{"never lets go", usbfw.Firmware{Owned: true, ReleaseAfter: -1}, "firmware did not let go in 1s: taken"},
			{"never owned it", usbfw.Firmware{}, "claimed; firmware did not own it"},
			{"no legacy support", usbfw.Firmware{Owned: true, NoLegacy: true}, ""},
		} {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				m := sim.NewMachine(sim.Config{})
				a := pci.Addr{Dev: 0x14}
				ctl := k.plug(c.fw)
				if err := m.Bus.Add(a, ctl); err != nil {
					t.Fatal(err)
				}
				if err := m.Bus.WriteConfig(a, 0x10, 4, 0xfe000000); err != nil { // BAR0
					t.Fatal(err)
				}
				if err := m.Bus.WriteConfig(a, 4, 2, sim.CmdMemory); err != nil {
					t.Fatal(err)
				}
				got, err := k.handoff(m, a)
				if err != nil || (c.says == "" && got != "") || !strings.HasPrefix(got, c.says) {
					t.Fatalf("hand-off: %q, %v; want %q", got, err, c.says)
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
}

// UHCI has no semaphore: firmware's hold is LEGSUP's enables, and taking
// the controller turns them all off and clears what is pending. A clean
// register is left as it is; an absent function is an error.
func TestUHCI(t *testing.T) {
	for _, c := range []struct {
		name   string
		legsup uint16
		says   string
	}{
		{"emulating a keyboard", usbfw.UHCIFirmwareLEGSUP, "taken from firmware, its SMIs and port 60h/64h traps off (LEGSUP 0x213f)"},
		{"the PCI interrupt alone", 1 << 13, "taken from firmware, its SMIs and port 60h/64h traps off (LEGSUP 0x2000)"},
		{"nothing held", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := sim.NewMachine(sim.Config{})
			a := pci.Addr{Dev: 0x1a}
			ctl := usbfw.NewUHCI(c.legsup)
			if err := m.Bus.Add(a, ctl); err != nil {
				t.Fatal(err)
			}
			got, err := UHCI(m.Bus, a)
			if err != nil || got != c.says {
				t.Fatalf("UHCI: %q, %v; want %q", got, err, c.says)
			}
			if v := ctl.LEGSUP(); v != 0 {
				t.Errorf("LEGSUP %#x after the hand-off, want 0", v)
			}
		})
	}
	m := sim.NewMachine(sim.Config{})
	if got, err := UHCI(m.Bus, pci.Addr{Dev: 0x1a}); err == nil {
		t.Errorf("an absent function: %q, no error", got)
	}
}
