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
// itself); its pages come from the allocator, not from under the link
// address, and the data pages are mapped where the module lies: so the
// physical address of neither is its link address, and reading that
// physical memory gives the variable's bytes.
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
	mid := lazyBSS[len(lazyBSS)/2 : len(lazyBSS)/2+64]
	if err := backedElsewhere("bss", unsafe.Pointer(&mid[0]), mid); err != nil {
		return err
	}
	return backedElsewhere("data", unsafe.Pointer(&inPlace), inPlace[:])
}

// backedElsewhere checks that the variable b at p lies in a physical
// page other than its link address, which is no longer identity mapped,
// and that the physical page holds b's bytes.
func backedElsewhere(what string, p unsafe.Pointer, b []byte) error {
	va := uint64(uintptr(p))
	pa, err := metal.Phys(p)
	if err != nil {
		return fmt.Errorf("phys of %s: %w", what, err)
	}
	if pa == va {
		return fmt.Errorf("%s at %#x is at its own physical address, not in a page of the module or the allocator", what, va)
	}
	if _, err := metal.Window(va, len(b)); err == nil {
		return fmt.Errorf("window over %s's %#x succeeded: the link address is not identity mapped any more", what, va)
	}
	w, err := metal.Window(pa, len(b))
	if err != nil {
		return fmt.Errorf("window over %s's physical %#x: %w", what, pa, err)
	}
	if !bytes.Equal(w, b) {
		return fmt.Errorf("physical %#x holds %q, not %s's %q", pa, w, what, b)
	}
	return nil
}
