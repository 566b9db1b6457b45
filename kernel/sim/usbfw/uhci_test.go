package usbfw

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// UHCI's LEGSUP through configuration space: the read/write enables take
// what is written, a byte at a time too, the pending SMIs clear where
// ones are written, and nothing else moves.
func TestUHCILEGSUP(t *testing.T) {
	b := sim.NewBus()
	a := pci.Addr{Dev: 0x1a}
	c := NewUHCI(UHCIFirmwareLEGSUP)
	if err := b.Add(a, c); err != nil {
		t.Fatal(err)
	}
	if v, err := b.ReadConfig(a, UHCILEGSUP, 2); err != nil || v != UHCIFirmwareLEGSUP {
		t.Fatalf("LEGSUP at hand-over %#x, %v; want %#x", v, err, UHCIFirmwareLEGSUP)
	}
	if err := b.WriteConfig(a, UHCILEGSUP, 1, 0x20); err != nil { // the low byte: A20 pass-through alone
		t.Fatal(err)
	}
	if got, want := c.LEGSUP(), uint16(1<<13|1<<8|1<<5); got != want {
		t.Errorf("after the low byte: LEGSUP %#x, want %#x", got, want)
	}
	if err := b.WriteConfig(a, UHCILEGSUP, 2, 0x8f00); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.ReadConfig(a, UHCILEGSUP, 2); v != 0 || c.LEGSUP() != 0 {
		t.Errorf("after 0x8f00: LEGSUP reads %#x, holds %#x; want 0", v, c.LEGSUP())
	}
}
