package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ether9/ether9/boot/image"
	"github.com/ether9/ether9/boot/qemu"
	"github.com/ether9/ether9/boot/uki"
)

// diskName is the disk image -o writes and -disk boots.
const diskName = "ether9.img"

// bootProgram returns the UEFI boot program for p: systemd's stub from
// o.efiStub with p's kernel, p's initramfs (and with it what -app packs)
// and cmdline, checked to fit a disk of o.diskMiB. Nothing is written.
func bootProgram(o options, p *parts, cmdline string) ([]byte, error) {
	kernel, err := os.ReadFile(p.kernel)
	if err != nil {
		return nil, fmt.Errorf("disk image: %w", err)
	}
	if err := uki.CheckKernel(kernel); err != nil {
		return nil, fmt.Errorf("disk image: %s: %w", p.kernel, err)
	}
	stub, err := os.ReadFile(o.efiStub)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("disk image: no EFI stub at %s: run tools/run, which installs Debian's systemd-boot-efi, or apt-get install systemd-boot-efi, or pass -efistub FILE", o.efiStub)
	}
	if err != nil {
		return nil, fmt.Errorf("disk image: %w", err)
	}
	initrd, err := os.ReadFile(p.initrd)
	if err != nil {
		return nil, fmt.Errorf("disk image: %w", err)
	}
	prog, err := uki.Build(uki.Parts{Stub: stub, Kernel: kernel, Initrd: initrd, Cmdline: cmdline})
	if err != nil {
		return nil, fmt.Errorf("disk image: %s: %w", o.efiStub, err)
	}
	if _, err := image.CheckDiskSize(int64(len(prog)), diskBytes(o)); err != nil {
		return nil, fmt.Errorf("%w (-disksize %d)", err, o.diskMiB)
	}
	return prog, nil
}

func diskBytes(o options) int64 { return int64(o.diskMiB) << 20 }

// makeDisk writes p's disk image into p's scratch directory with the
// hardware command line, and the firmware to boot it, for -disk.
func (p *parts) makeDisk(o options, log io.Writer) error {
	fw, err := qemu.FindOVMF(qemu.OVMFPaths)
	if err != nil {
		return err
	}
	t := time.Now()
	cmdline := image.HardwareCmdline(p.cmdline)
	prog, err := bootProgram(o, p, cmdline)
	if err != nil {
		return err
	}
	path := filepath.Join(p.dir, diskName)
	if err := image.WriteDisk(path, prog, diskBytes(o)); err != nil {
		return err
	}
	p.disk, p.firmware, p.cmdline = path, fw, cmdline
	st, _ := os.Stat(path)
	fmt.Fprintf(log, "boot: %s: %.1f MB, %s %.1f MB, firmware %s (%.1fs)\n",
		diskName, float64(st.Size())/1e6, image.BootPath, float64(len(prog))/1e6, fw.Code, time.Since(t).Seconds())
	return nil
}
