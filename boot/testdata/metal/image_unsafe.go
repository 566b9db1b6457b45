package main

import (
	"bytes"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/kernel/metal"
)

// lazyBSS sits in /init's zero-filled tail, which the shim maps on first
// touch rather than zeroing when it loads /init.
var lazyBSS [8 << 20]byte

// inPlace is initialised data: its page is mapped where the loader left
// the module, not copied to the link address.
var inPlace = [64]byte{'m', 'e', 't', 'a', 'l', 31: 'i', 63: 'n'}

// image checks how the shim loads /init: the zero tail reads zeros where
// nothing touched it, holds what is written, and takes a system call's
// output in a page no instruction touched first (the shim faults it in
// itself); the data pages are mapped where the module lies, so their
// physical address is not their link address, and reading that physical
// memory gives the variable's bytes.
func image() error {
	const page = 4096
	for off := 0; off < len(lazyBSS); off += 64 << 10 {
		if lazyBSS[off] != 0 || lazyBSS[off+page-1] != 0 {
			return fmt.Errorf("bss at +%#x is not zero", off)
		}
		lazyBSS[off] = byte(off >> 16)
	}
	for off := 0; off < len(lazyBSS); off += 64 << 10 {
		if lazyBSS[off] != byte(off>>16) {
			return fmt.Errorf("bss at +%#x lost what was written", off)
		}
	}
	// The last 64 KiB are untouched yet: getrandom writes there from the shim.
	out := lazyBSS[len(lazyBSS)-3*page : len(lazyBSS)-2*page]
	if n, err := unix.Getrandom(out, 0); err != nil || n != len(out) {
		return fmt.Errorf("getrandom into untouched bss: %d, %v", n, err)
	}
	if bytes.Count(out, []byte{0}) > len(out)/8 {
		return fmt.Errorf("getrandom into untouched bss left it zero")
	}
	pa, err := metal.Phys(unsafe.Pointer(&lazyBSS[len(lazyBSS)/2]))
	if err != nil {
		return fmt.Errorf("phys of bss: %w", err)
	}
	if va := uint64(uintptr(unsafe.Pointer(&lazyBSS[len(lazyBSS)/2]))); pa != va {
		return fmt.Errorf("bss at %#x is at physical %#x, not its own address", va, pa)
	}
	va := uint64(uintptr(unsafe.Pointer(&inPlace)))
	pa, err = metal.Phys(unsafe.Pointer(&inPlace))
	if err != nil {
		return fmt.Errorf("phys of data: %w", err)
	}
	if pa == va {
		return fmt.Errorf("data at %#x was copied to its link address, not mapped in place", va)
	}
	if _, err := metal.Window(va, len(inPlace)); err == nil {
		return fmt.Errorf("window over %#x succeeded: the link address is not identity mapped any more", va)
	}
	w, err := metal.Window(pa, len(inPlace))
	if err != nil {
		return fmt.Errorf("window over data's physical %#x: %w", pa, err)
	}
	if !bytes.Equal(w, inPlace[:]) {
		return fmt.Errorf("physical %#x holds %q, not the variable's %q", pa, w, inPlace[:])
	}
	return nil
}
