package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ether9/ether9/boot/grub"
	"github.com/ether9/ether9/boot/image"
)

// outFile is one file written by -o: from a file, or data.
type outFile struct {
	name string
	from string
	data []byte
	exec bool // a program: mode 0755
}

func (f outFile) mode() os.FileMode {
	if f.exec {
		return 0o755
	}
	return 0o644
}

// writeOut writes the image for a real machine into o.outDir and says how
// to boot it there.
func writeOut(ctx context.Context, o options, out io.Writer) error {
	p, err := assemble(ctx, o, out)
	if err != nil {
		return err
	}
	defer p.remove()
	if o.platform == "metal" {
		return writeOutMetal(ctx, o, p, out)
	}
	kernel, err := os.ReadFile(p.kernel)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	cmdline := image.HardwareCmdline(p.cmdline)
	// The disk's boot program is made, and its fit checked, before any
	// file is written: a kernel without an EFI stub, a missing stub or
	// an image over -disksize leaves the directory as it was. The
	// initramfs is the one built for this run, so whatever -app packs
	// into it is on the disk too.
	disk, err := diskFiles(ctx, o, p, cmdline)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	files := []outFile{
		{name: "initramfs.cpio", from: p.initrd},
		{name: "cmdline", data: []byte(cmdline + "\n")},
	}
	// Hardware boot loaders want the bzImage; QEMU boots vmlinux faster.
	hw, vm := "vmlinux", "vmlinux"
	if image.IsBzImage(kernel) {
		hw = "vmlinuz"
		files = append(files, outFile{name: "vmlinuz", data: kernel})
		if p.boot == p.kernel {
			vm = "vmlinuz" // no vmlinux could be unpacked
		} else {
			files = append(files, outFile{name: "vmlinux", from: p.boot})
		}
	} else {
		files = append(files, outFile{name: "vmlinux", data: kernel})
	}

	dir, err := writeFiles(o, files, disk)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, `wrote %[1]s: %[5]s, %[2]s, initramfs.cpio, cmdline

Boot it on a machine with an Intel NIC (e1000e, igb or igc family) and VT-d
enabled in the firmware setup. The console is the screen and the serial
port (ttyS0, 115200 8N1).

  from a USB stick (UEFI; Secure Boot off, or the image signed with your
  own keys: README.md, Booting on hardware). Every byte on the stick is lost:
    Linux:   dd if=%[1]s/%[5]s of=/dev/sdX bs=4M conv=fsync   (lsblk names the stick)
    macOS:   diskutil unmountDisk /dev/diskN && sudo dd if=%[1]s/%[5]s of=/dev/rdiskN bs=4m
    Windows: write %[5]s with Rufus (DD mode) or balenaEtcher
  then boot the machine from the stick (its boot menu key: F12, F11, F8 or Esc).

  from a running Linux, with kexec-tools:
    kexec -l %[1]s/%[2]s --initrd=%[1]s/initramfs.cpio --command-line="$(cat %[1]s/cmdline)"
    kexec -e

  from a USB stick or disk with GRUB: copy %[2]s and initramfs.cpio to /ether9/ and add
    menuentry 'ether9' {
        linux  /ether9/%[2]s %[3]s
        initrd /ether9/initramfs.cpio
    }

  in QEMU, as go run ./boot does:
    qemu-system-x86_64 -machine q35,sata=off,smbus=off,i8042=off,vmport=off -cpu max -m 1G -nographic -no-reboot -vga none \
      -kernel %[1]s/%[4]s -initrd %[1]s/initramfs.cpio -append "$(cat %[1]s/cmdline)" \
      -device intel-iommu -netdev user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:8080-:80 \
      -device e1000e,netdev=n0,romfile=
  in QEMU, from the USB stick under UEFI firmware, as go run ./boot -boot disk does:
    qemu-system-x86_64 -machine q35,sata=off,smbus=off,i8042=off,vmport=off -cpu max -m 1G -nographic -no-reboot -vga none \
      -drive if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd \
      -drive if=pflash,format=raw,unit=1,snapshot=on,file=/usr/share/OVMF/OVMF_VARS_4M.fd \
      -drive if=none,id=stick,format=raw,readonly=on,file=%[1]s/%[5]s \
      -device qemu-xhci,id=xhci -device usb-storage,bus=xhci.0,drive=stick,removable=on,bootindex=0 \
      -device intel-iommu -netdev user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:8080-:80 \
      -device e1000e,netdev=n0,romfile=
`, dir, hw, cmdline, vm, diskName)
	return nil
}

// writeFiles writes files and the disk image of disk into o.outDir and
// returns the directory's absolute path.
func writeFiles(o options, files []outFile, disk []image.ESPFile) (string, error) {
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return "", fmt.Errorf("-o: %w", err)
	}
	for _, f := range files {
		data := f.data
		if f.from != "" {
			var err error
			if data, err = os.ReadFile(f.from); err != nil {
				return "", fmt.Errorf("-o: %w", err)
			}
		}
		if err := os.WriteFile(filepath.Join(o.outDir, f.name), data, f.mode()); err != nil {
			return "", fmt.Errorf("-o: %w", err)
		}
	}
	if err := image.WriteDiskFiles(filepath.Join(o.outDir, diskName), disk, diskBytes(o)); err != nil {
		return "", fmt.Errorf("-o: %w", err)
	}
	dir, err := filepath.Abs(o.outDir)
	if err != nil {
		return "", fmt.Errorf("-o: %w", err)
	}
	return dir, nil
}

// writeOutMetal writes the metal platform's image: ether9.img (GRUB, the
// shim and /init on the EFI system partition), the shim and /init for
// another loader, the command line and a GRUB menu entry, and says how
// to boot them.
func writeOutMetal(ctx context.Context, o options, p *parts, out io.Writer) error {
	cmdline := diskCmdline(o, p)
	// As on the linux platform, everything is made and checked before a
	// file is written: a missing GRUB, a word GRUB would change or an
	// image over -disksize leaves the directory as it was.
	disk, err := diskFiles(ctx, o, p, cmdline)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	entry, err := grub.Menuentry("/ether9", cmdline)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	files := []outFile{
		{name: "shim.elf", from: p.kernel},
		{name: "init", from: p.init, exec: true},
		{name: "cmdline", data: []byte(cmdline + "\n")},
		{name: "grub.cfg", data: []byte(entry)},
	}
	dir, err := writeFiles(o, files, disk)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, `wrote %[1]s: %[2]s, shim.elf, init, cmdline, grub.cfg (the metal platform: no Linux)

Boot it on a machine with an Intel NIC (e1000e, igb or igc family) and VT-d
enabled in the firmware setup. The console is the serial port (COM1, 115200
8N1) only: the screen shows the firmware and nothing after it.

  from a USB stick (UEFI, Secure Boot off: README.md, Booting on hardware).
  GRUB on the stick starts the shim with /init. Every byte on the stick is lost:
    Linux:   dd if=%[1]s/%[2]s of=/dev/sdX bs=4M conv=fsync   (lsblk names the stick)
    macOS:   diskutil unmountDisk /dev/diskN && sudo dd if=%[1]s/%[2]s of=/dev/rdiskN bs=4m
    Windows: write %[2]s with Rufus (DD mode) or balenaEtcher
  then boot the machine from the stick (its boot menu key: F12, F11, F8 or Esc).

  from a machine's own GRUB: copy shim.elf and init to /ether9/ on a disk it
  reads and add the entry in %[1]s/grub.cfg (Multiboot2: multiboot2 and module2).

  in QEMU, as go run ./boot -platform metal does (qboot loads the shim through its PVH note):
    qemu-system-x86_64 -machine q35,sata=off,smbus=off,i8042=off,vmport=off -cpu max -m 1G -nographic -no-reboot -vga none \
      -bios /usr/share/qemu/qboot.rom -kernel %[1]s/shim.elf -initrd %[1]s/init -append "$(cat %[1]s/cmdline)" \
      -device intel-iommu,intremap=on,eim=on -netdev user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:8080-:80 \
      -device e1000e,netdev=n0,romfile=
  in QEMU, from the USB stick under UEFI firmware, as go run ./boot -platform metal -boot disk does:
    qemu-system-x86_64 -machine q35,sata=off,smbus=off,i8042=off,vmport=off -cpu max -m 1G -nographic -no-reboot -vga none \
      -drive if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd \
      -drive if=pflash,format=raw,unit=1,snapshot=on,file=/usr/share/OVMF/OVMF_VARS_4M.fd \
      -drive if=none,id=stick,format=raw,readonly=on,file=%[1]s/%[2]s \
      -device qemu-xhci,id=xhci -device usb-storage,bus=xhci.0,drive=stick,removable=on,bootindex=0 \
      -device intel-iommu,intremap=on,eim=on -netdev user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:8080-:80 \
      -device e1000e,netdev=n0,romfile=
`, dir, diskName)
	return nil
}
