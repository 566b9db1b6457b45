package main

import (
	"context"
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

// compareBoot runs the self-test twice, QEMU loading the kernel itself
// and then the firmware booting ether9.img, and prints both reports and
// the two side by side: the disk's boot adds the firmware, the stick's
// reads and the kernel's own decompression.
func compareBoot(ctx context.Context, o options, out io.Writer) error {
	rs, err := compareBootReports(ctx, o, out)
	if rs[0] != nil && rs[1] != nil {
		printComparison(out, "ether9.img under UEFI firmware against the kernel loaded by QEMU", [2]string{"disk", "kernel"}, rs[1:], rs[:1])
	}
	return err
}

// compareBootReports runs the two boots of compareBoot, the kernel's
// first, and returns their reports as far as each got.
func compareBootReports(ctx context.Context, o options, out io.Writer) ([2]*report, error) {
	var rs [2]*report
	var errs []error
	for i, disk := range []bool{false, true} {
		o.disk = disk
		name := map[bool]string{false: "kernel", true: "disk"}[disk]
		fmt.Fprintf(out, "selftest: boot %d of 2: -boot %s\n", i+1, name)
		r, err := selftest(ctx, o, out)
		if r != nil {
			r.print(out)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("-boot %s: %w", name, err))
		}
		rs[i] = r
	}
	return rs, errors.Join(errs...)
}
