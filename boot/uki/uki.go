// Package uki makes a unified kernel image: one UEFI executable that boots
// Linux with a fixed command line and initramfs, and no boot loader. It is
// systemd's EFI stub (linuxx64.efi.stub from Debian's systemd-boot-efi)
// with the kernel, the initramfs, the command line and an os-release
// appended as the PE sections the stub looks up by name in its own loaded
// image (.osrel, .cmdline, .linux, .initrd; UAPI group's Unified Kernel
// Image specification).
package uki

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultStub is where Debian's systemd-boot-efi installs the stub.
const DefaultStub = "/usr/lib/systemd/boot/efi/linuxx64.efi.stub"

// pageAlign places each payload section on a page of its own: the stub
// and the kernel's own loader then never share a page between them.
const pageAlign = 4096

// Boot-protocol setup header fields (Linux Documentation/arch/x86/boot.rst).
const (
	hdrMagic   = 0x202 // "HdrS"
	hdrVersion = 0x206
	hdrKver    = 0x20e // kernel_version: offset of a NUL-terminated string, less 0x200
)

// ErrNoEFIStub says a kernel cannot be started by UEFI firmware.
var ErrNoEFIStub = errors.New("kernel has no EFI stub")

// Parts are what one image boots.
type Parts struct {
	Stub    []byte // systemd's linuxx64.efi.stub
	Kernel  []byte // a bzImage with an EFI stub (CONFIG_EFI_STUB)
	Initrd  []byte
	Cmdline string
	OSRel   string // os-release text naming the entry in boot menus; "": OSRelease of the kernel's version
}

// CheckKernel says whether k is an x86-64 bzImage that UEFI firmware can
// start: a PE32+ image (the EFI stub) around the boot protocol header.
func CheckKernel(k []byte) error {
	if len(k) < hdrKver+2 || string(k[hdrMagic:hdrMagic+4]) != "HdrS" {
		return fmt.Errorf("%w: not a bzImage (no boot protocol header; a vmlinux cannot be started by firmware)", ErrNoEFIStub)
	}
	f, err := Parse(k)
	if err != nil {
		return fmt.Errorf("%w (built without CONFIG_EFI_STUB?): %v", ErrNoEFIStub, err)
	}
	if f.Machine != machineAMD64 || f.Entry == 0 {
		return fmt.Errorf("%w: PE machine %#x, entry point %#x: want an x86-64 entry", ErrNoEFIStub, f.Machine, f.Entry)
	}
	return nil
}

// KernelVersion returns the version string a bzImage carries
// ("6.1.0-57-amd64 (debian-kernel@lists.debian.org) #1 SMP ..."), or "".
func KernelVersion(k []byte) string {
	if len(k) < hdrKver+2 || string(k[hdrMagic:hdrMagic+4]) != "HdrS" || le.Uint16(k[hdrVersion:]) < 0x200 {
		return ""
	}
	off := int(le.Uint16(k[hdrKver:])) + 0x200
	if off <= 0x200 || off >= len(k) {
		return ""
	}
	end := off
	for end < len(k) && end-off < 256 && k[end] != 0 {
		end++
	}
	return string(k[off:end])
}

// OSRelease returns the .osrel text for an image of kernel version kver.
func OSRelease(kver string) string {
	v, _, _ := strings.Cut(kver, " ")
	var b strings.Builder
	b.WriteString("NAME=\"ether9\"\nID=ether9\n")
	if v != "" && !strings.ContainsAny(v, "\"\\`$") {
		fmt.Fprintf(&b, "VERSION_ID=%q\nPRETTY_NAME=\"ether9 (Linux %s)\"\n", v, v)
	} else {
		b.WriteString("PRETTY_NAME=\"ether9\"\n")
	}
	return b.String()
}

// Build returns the unified kernel image of p. The stub must be an x86-64
// PE32+ image without the sections it adds.
func Build(p Parts) ([]byte, error) {
	if err := CheckKernel(p.Kernel); err != nil {
		return nil, err
	}
	stub, err := Parse(p.Stub)
	if err != nil {
		return nil, fmt.Errorf("EFI stub: %w", err)
	}
	if stub.Machine != machineAMD64 {
		return nil, fmt.Errorf("EFI stub: machine %#x, want x86-64 (%#x)", stub.Machine, machineAMD64)
	}
	if _, ok := stub.Section(".sdmagic"); !ok {
		return nil, fmt.Errorf("EFI stub: no .sdmagic section: not systemd's stub")
	}
	if p.Cmdline == "" || strings.ContainsAny(p.Cmdline, "\x00\n") {
		return nil, fmt.Errorf("uki: command line %q: want one non-empty line", p.Cmdline)
	}
	if len(p.Initrd) == 0 {
		return nil, fmt.Errorf("uki: empty initramfs")
	}
	if p.OSRel == "" {
		p.OSRel = OSRelease(KernelVersion(p.Kernel))
	}
	out, err := stub.Append(pageAlign,
		AddSection{".osrel", []byte(p.OSRel)},
		AddSection{".cmdline", []byte(p.Cmdline)},
		AddSection{".linux", p.Kernel},
		AddSection{".initrd", p.Initrd},
	)
	if err != nil {
		return nil, fmt.Errorf("EFI stub: %w", err)
	}
	return out, nil
}
