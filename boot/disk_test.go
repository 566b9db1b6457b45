package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/image"
	"github.com/ether9/ether9/boot/qemu"
	"github.com/ether9/ether9/boot/uki"
)

// needStub skips a test when systemd's EFI stub is missing, except under
// CI=true, where tools/test installed it.
func needStub(t *testing.T) {
	t.Helper()
	_, err := os.Stat(uki.DefaultStub)
	needInstalled(t, err, "systemd-boot-efi")
}

// needOVMF skips a test when the UEFI firmware is missing, except under
// CI=true.
func needOVMF(t *testing.T) {
	t.Helper()
	_, err := qemu.FindOVMF(qemu.OVMFPaths)
	needInstalled(t, err, "ovmf")
}

func needInstalled(t *testing.T, err error, pkg string) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %v (tools/lib/install.sh installs %s)", err, pkg)
	}
	t.Skipf("skipping: %v", err)
}

// checkDisk reads the boot program back out of the disk image and checks
// that it boots kernel with initrd and cmdline, as the stub finds them.
func checkDisk(t *testing.T, path string, kernel, initrd []byte, cmdline string) {
	t.Helper()
	prog, err := image.ReadBootProgram(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	f, err := uki.Parse(prog)
	if err != nil {
		t.Fatalf("%s: %v", image.BootPath, err)
	}
	for name, want := range map[string][]byte{".linux": kernel, ".initrd": initrd, ".cmdline": []byte(cmdline)} {
		s, ok := f.Section(name)
		if !ok {
			t.Fatalf("%s has no %s section", image.BootPath, name)
		}
		got, err := f.Data(s)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s %s: %d bytes %.60q (%v), want %d bytes %.60q", image.BootPath, name, len(got), got, err, len(want), want)
		}
	}
}

// TestWriteOutRefuses: a kernel without an EFI stub, a missing stub and
// an image over -disksize each stop -o with a clear error before any file
// is written.
func TestWriteOutRefuses(t *testing.T) {
	needKernel(t)
	notEFI := filepath.Join(t.TempDir(), "vmlinux")
	if err := os.WriteFile(notEFI, append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 4096)...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"kernel without EFI stub", []string{"-kernel", notEFI}, "kernel has no EFI stub"},
		{"missing stub", []string{"-efistub", "/nonexistent/linuxx64.efi.stub"}, "no EFI stub at /nonexistent/linuxx64.efi.stub"},
		{"image over -disksize", []string{"-disksize", "16"}, "does not fit in 16 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(c.name, "missing stub") {
				needStub(t)
			}
			dir := filepath.Join(t.TempDir(), "out")
			var stdout, stderr bytes.Buffer
			args := append([]string{"-o", dir, "-app", "./boot/testdata/hello"}, c.args...)
			if code := run(args, &stdout, &stderr); code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("message %q lacks %q", stderr.String(), c.want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				m, _ := filepath.Glob(filepath.Join(dir, "*"))
				t.Errorf("-o wrote %q before failing", m)
			}
		})
	}
}

// diskReady says whether the disk boot can run: the stub and the firmware
// are there. Under CI=true they must be.
func diskReady(t *testing.T) bool {
	t.Helper()
	_, errStub := os.Stat(uki.DefaultStub)
	_, errFW := qemu.FindOVMF(qemu.OVMFPaths)
	err := errors.Join(errStub, errFW)
	if err == nil {
		return true
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %v (tools/lib/install.sh installs ovmf and systemd-boot-efi)", err)
	}
	t.Logf("skipping the disk boot: %v", err)
	return false
}

// checkBootLine wants the card /init prints: the command line the kernel
// got (from QEMU's -append, or from the UKI's .cmdline with VT-d still
// left to ether9), the NIC (its slot moves with the USB controller), the
// address. Booted from the disk, the
// firmware must have started the USB stick and /init must write to the
// screen as well. token is the one the runner put on the command line.
func checkBootLine(t *testing.T, disk bool, token, console string) {
	t.Helper()
	cmdline := image.BaseCmdline + " ether9.token=" + token + " ether9.selftest"
	want := []string{
		"ether9: nic: ether0 e1000e 8086:10d3 at 00:0",
		" mac 52:54:00:12:34:56 link up 1000 Mb/s full duplex\n",
		"ether9: address: 10.0.2.15/24 (dhcp), status at http://10.0.2.15/",
	}
	if disk {
		cmdline = image.HardwareCmdline(cmdline)
		want = append(want, `BdsDxe: starting Boot0001 "UEFI QEMU QEMU USB HARDDRIVE`, "console: also on tty0")
	}
	want = append(want, "ether9: boot line: "+cmdline+"\n")
	console = strings.ReplaceAll(console, "\r", "")
	if strings.Contains(console, "the kernel command line lacks") {
		t.Errorf("console (disk %v): /init says the kernel command line lacks words of ours", disk)
	}
	for _, w := range want {
		if !strings.Contains(console, w) {
			var card []string
			for _, l := range strings.Split(console, "\n") {
				if strings.HasPrefix(l, "ether9: ") {
					card = append(card, l)
				}
			}
			t.Errorf("console (disk %v) lacks %q; its ether9: lines:\n%s", disk, w, strings.Join(card, "\n"))
		}
	}
}

// TestBootLockdown boots /init on a kernel locked down as Debian's is
// under Secure Boot (lockdown=integrity raises it the same way): /init
// cannot take the machine and must say why.
func TestBootLockdown(t *testing.T) {
	needMachine(t, "e1000e")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log syncBuffer
	o := testOptions("e1000e", "./boot/init")
	vm, _ := startVM(t, ctx, o, &log, "lockdown=integrity")
	// The platform's first failure, whatever it says, ends the wait: the
	// console stays up after it and says nothing more.
	l, err := vm.Console.WaitMatch(ctx, regexp.MustCompile(`ether9: .*iopl`))
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, log.String())
	}
	if !strings.Contains(l.Text, "the kernel is locked down (integrity)") || !strings.Contains(l.Text, "turn Secure Boot off") {
		t.Errorf("/init said %q: want it to name the lockdown and to say to turn Secure Boot off", l.Text)
	}
}
