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

	"github.com/ether9/ether9/boot/grub"
	"github.com/ether9/ether9/boot/image"
	"github.com/ether9/ether9/boot/qemu"
	"github.com/ether9/ether9/boot/uki"
)

// diskName is the disk image -o writes and -disk boots.
const diskName = "ether9.img"

// bootProgram returns the UEFI boot program for p: systemd's stub from
// o.efiStub with p's kernel, p's initramfs (and with it what -app packs)
// and cmdline. Nothing is written.
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
	return prog, nil
}

// diskCmdline is the command line p's disk image boots with: the linux
// platform's names the screen and the serial port as hardware consoles;
// the shim has only COM1 and takes p's line as it is.
func diskCmdline(o options, p *parts) string {
	if o.platform == "metal" {
		return p.cmdline
	}
	return image.HardwareCmdline(p.cmdline)
}

// diskFiles returns the files of p's EFI system partition, booting with
// cmdline, checked to fit a disk of o.diskMiB. On the linux platform
// that is the unified kernel image alone; on metal, GRUB with its
// configuration built in, the shim and /init beside it. Nothing is
// written.
func diskFiles(ctx context.Context, o options, p *parts, cmdline string) ([]image.ESPFile, error) {
	var files []image.ESPFile
	if o.platform == "metal" {
		cfg, err := grub.Config(cmdline)
		if err != nil {
			return nil, fmt.Errorf("disk image: %w", err)
		}
		prog, err := grub.Build(ctx, grub.ModuleDir, cfg)
		if err != nil {
			return nil, fmt.Errorf("disk image: %w", err)
		}
		files = append(files, image.ESPFile{Path: image.BootPath, Data: prog})
		for _, f := range []struct{ path, from string }{{grub.ShimPath, p.kernel}, {grub.InitPath, p.init}} {
			b, err := os.ReadFile(f.from)
			if err != nil {
				return nil, fmt.Errorf("disk image: %w", err)
			}
			files = append(files, image.ESPFile{Path: f.path, Data: b})
		}
	} else {
		prog, err := bootProgram(o, p, cmdline)
		if err != nil {
			return nil, err
		}
		files = append(files, image.ESPFile{Path: image.BootPath, Data: prog})
	}
	var n int64
	for _, f := range files {
		n += int64(len(f.Data))
	}
	if _, err := image.CheckDiskSize(n, diskBytes(o)); err != nil {
		return nil, fmt.Errorf("%w (-disksize %d)", err, o.diskMiB)
	}
	return files, nil
}

func diskBytes(o options) int64 { return int64(o.diskMiB) << 20 }

// makeDisk writes p's disk image into p's scratch directory with the
// hardware command line, and the firmware to boot it, for -disk.
func (p *parts) makeDisk(ctx context.Context, o options, log io.Writer) error {
	fw, err := qemu.FindOVMF(qemu.OVMFPaths)
	if err != nil {
		return err
	}
	t := time.Now()
	cmdline := diskCmdline(o, p)
	files, err := diskFiles(ctx, o, p, cmdline)
	if err != nil {
		return err
	}
	path := filepath.Join(p.dir, diskName)
	if err := image.WriteDiskFiles(path, files, diskBytes(o)); err != nil {
		return err
	}
	p.disk, p.firmware, p.cmdline = path, fw, cmdline
	st, _ := os.Stat(path)
	fmt.Fprintf(log, "boot: %s: %.1f MB, %s %.1f MB, firmware %s (%.1fs)\n",
		diskName, float64(st.Size())/1e6, image.BootPath, float64(len(files[0].Data))/1e6, fw.Code, time.Since(t).Seconds())
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
