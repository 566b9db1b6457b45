package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			args := append([]string{"-o", dir, "-init", "./boot/testdata/hello"}, c.args...)
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
