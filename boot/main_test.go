package main

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ether9/ether9/boot/image"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-nic", "igb", "-smp", "2", "-m", "512", "-port", "9090", "-append", "ether9.ip=10.0.2.15/24"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.nic != "igb" || o.smp != 2 || o.memMiB != 512 || o.port != 9090 || !o.portSet || o.appendTo != "ether9.ip=10.0.2.15/24" {
		t.Fatalf("parsed %+v", o)
	}
	if o, _ := parseFlags(nil, &bytes.Buffer{}); o.portSet || o.port != 8080 || o.nic != "e1000e" || o.machine != "qemu" || o.ctl != nil {
		t.Fatalf("defaults %+v", o)
	}
	if o, err := parseFlags([]string{"-selftest", "-ctl", " ether0 csum audit on ;; ether0 build on;"}, &bytes.Buffer{}); err != nil || len(o.ctl) != 2 || o.ctl[0] != "ether0 csum audit on" || o.ctl[1] != "ether0 build on" {
		t.Fatalf("-ctl: %q, %v", o.ctl, err)
	}
	for _, bad := range [][]string{
		{"-machine", "bochs"},
		{"-port", "70000"},
		{"-selftest", "-o", "/tmp/x"},
		{"-boot", "disk", "-o", "/tmp/x"},
		{"-boot", "disk", "-machine", "sim"},
		{"-boot", "disk", "-xdp"},
		{"-boot", "both"},
		{"-boot", "both", "-selftest", "-irq", "both"},
		{"-boot", "bios"},
		{"-disksize", "-1"},
		{"stray"},
		{"-no-such-flag"},
		{"-ctl", "ether0 csum audit on"},
		{"-ctl", "ether0 tso off", "-selftest", "-driver", "linux"},
	} {
		if _, err := parseFlags(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRunIGCSaysSim(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-nic", "igc"}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "no model") || !strings.Contains(stderr.String(), "-machine sim") {
		t.Fatalf("message %q does not point to -machine sim", stderr.String())
	}
}

func TestRunMissingKernel(t *testing.T) {
	var stdout, stderr bytes.Buffer
	missing := filepath.Join(t.TempDir(), "vmlinuz")
	if code := run([]string{"-o", t.TempDir(), "-kernel", missing}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), missing) {
		t.Fatalf("message %q does not name the kernel", stderr.String())
	}
}

// TestWriteOut writes an image for hardware with the real kernel and the
// smallest /init, and checks every file.
func TestWriteOut(t *testing.T) {
	needKernel(t)
	needStub(t)
	dir := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	args := []string{"-o", dir, "-app", "./boot/testdata/hello", "-append", "ether9.ip=192.168.1.9/24"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	want := image.HardwareCmdline(image.BaseCmdline) + " ether9.ip=192.168.1.9/24"
	if err != nil || strings.TrimSpace(string(cmdline)) != want {
		t.Fatalf("cmdline %q, %v", cmdline, err)
	}
	vmlinuz, err := os.ReadFile(filepath.Join(dir, "vmlinuz"))
	if err != nil || !image.IsBzImage(vmlinuz) {
		t.Fatalf("vmlinuz: %v (bzImage %v)", err, image.IsBzImage(vmlinuz))
	}
	f, err := elf.Open(filepath.Join(dir, "vmlinux"))
	if err != nil {
		t.Fatalf("vmlinux: %v", err)
	}
	f.Close()
	cpio, err := os.ReadFile(filepath.Join(dir, "initramfs.cpio"))
	if err != nil || !bytes.HasPrefix(cpio, []byte("070701")) {
		t.Fatalf("initramfs: %v", err)
	}
	checkDisk(t, filepath.Join(dir, diskName), vmlinuz, cpio, want)
	for _, want := range []string{"kexec -l " + dir + "/vmlinuz", "initrd /ether9/initramfs.cpio", "-kernel " + dir + "/vmlinux", "dd if=" + dir + "/ether9.img"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("instructions lack %q:\n%s", want, stdout.String())
		}
	}
}
