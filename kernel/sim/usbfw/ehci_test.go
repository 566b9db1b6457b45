package usbfw

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// The EHCI registers through configuration space, written a byte at a
// time as well as whole: the OS semaphore's byte alone sets it, the
// capability id and pointer stay read-only, the enables take what is
// written, the events clear where ones are written, and the BIOS lets go
// after ReleaseAfter reads.
func TestEHCIConfigRegisters(t *testing.T) {
	b := sim.NewBus()
	a := pci.Addr{Dev: 0x1d}
	c := NewEHCI(Firmware{Owned: true, ReleaseAfter: 2})
	if err := b.Add(a, c); err != nil {
		t.Fatal(err)
	}
	read := func(off int) uint32 {
		v, err := b.ReadConfig(a, off, 4)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	write := func(off, size int, v uint32) {
		if err := b.WriteConfig(a, off, size, v); err != nil {
			t.Fatal(err)
		}
	}
	if v := read(EHCIUSBLEGSUP); v != BIOSOwned|capLegacy {
		t.Fatalf("USBLEGSUP at hand-over %#x, want %#x", v, BIOSOwned|capLegacy)
	}
	write(EHCIUSBLEGSUP+3, 1, 1) // the OS semaphore's byte
	write(EHCIUSBLEGSUP, 1, 0)   // the id byte: read-only
	if v := read(EHCIUSBLEGSUP); v != BIOSOwned|OSOwned|capLegacy {
		t.Errorf("USBLEGSUP after the OS byte %#x, want both semaphores and id 1", v)
	}
	read(EHCIUSBLEGSUP)
	if v := read(EHCIUSBLEGSUP); v != OSOwned|capLegacy {
		t.Errorf("USBLEGSUP after the BIOS let go %#x, want %#x", v, OSOwned|capLegacy)
	}
	if v := read(EHCIUSBLEGCTLSTS); v != EHCISMIEnables|1<<29 {
		t.Fatalf("USBLEGCTLSTS %#x, want the enables and an ownership event", v)
	}
	write(EHCIUSBLEGCTLSTS+3, 1, 0x20) // clear the ownership event alone
	write(EHCIUSBLEGCTLSTS, 2, 1<<13)  // leave one enable of the low half
	if v := read(EHCIUSBLEGCTLSTS); v != 1<<13 {
		t.Errorf("USBLEGCTLSTS %#x, want %#x", v, 1<<13)
	}
	if _, _, smis := c.Owners(); smis != 1<<13 {
		t.Errorf("Owners' SMI enables %#x, want %#x", smis, 1<<13)
	}
}
