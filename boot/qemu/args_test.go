package qemu

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func config(t *testing.T) Config {
	t.Helper()
	nic, err := LookupNIC("e1000e")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Kernel: "/k/vmlinux", Initrd: "/k/initramfs.cpio", Cmdline: "console=ttyS0 ether9.ip=10.0.2.15/24",
		NIC: nic, SMP: 2, MemMiB: 1024, Forward: []Forward{{8080, 80}, {5640, 564}}}
}

// value returns the argument after the first occurrence of flag.
func value(a []string, flag string) string {
	i := slices.Index(a, flag)
	if i < 0 || i+1 >= len(a) {
		return ""
	}
	return a[i+1]
}

func TestArgs(t *testing.T) {
	c := config(t)
	c.Pcap = "/tmp/wire.pcap"
	a, err := c.Args()
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"-machine": "q35,sata=off,smbus=off,i8042=off,vmport=off",
		"-cpu":     "max",
		"-smp":     "2",
		"-m":       "1024",
		"-kernel":  "/k/vmlinux",
		"-initrd":  "/k/initramfs.cpio",
		"-append":  "console=ttyS0 ether9.ip=10.0.2.15/24",
		"-netdev":  "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:8080-:80,hostfwd=tcp:127.0.0.1:5640-:564",
		"-object":  "filter-dump,id=f0,netdev=n0,file=/tmp/wire.pcap",
		"-vga":     "none",
	} {
		if got := value(a, flag); got != want {
			t.Errorf("%s %q, want %q", flag, got, want)
		}
	}
	var devices []string
	for i := range a {
		if a[i] == "-device" {
			devices = append(devices, a[i+1])
		}
	}
	if !slices.Equal(devices, []string{"intel-iommu", "e1000e,netdev=n0,romfile="}) {
		t.Errorf("devices %q", devices)
	}
	for _, f := range []string{"-nographic", "-no-reboot"} {
		if !slices.Contains(a, f) {
			t.Errorf("missing %s", f)
		}
	}
	if slices.Contains(a, "-bios") {
		t.Errorf("-bios without Config.BIOS: %q", a)
	}
	c.BIOS = "/fw/qboot.rom"
	if a, err = c.Args(); err != nil || value(a, "-bios") != "/fw/qboot.rom" {
		t.Errorf("with BIOS: -bios %q (%v)", value(a, "-bios"), err)
	}
	c.InterruptRemapping = true
	if a, err = c.Args(); err != nil || value(a, "-device") != "intel-iommu,intremap=on" {
		t.Errorf("with interrupt remapping: -device %q (%v)", value(a, "-device"), err)
	}
	c.EIM = true
	if a, err = c.Args(); err != nil || value(a, "-device") != "intel-iommu,intremap=on,eim=on" {
		t.Errorf("with extended interrupt mode: -device %q (%v)", value(a, "-device"), err)
	}
	c.EHCI = true
	if a, err = c.Args(); err != nil || !slices.Contains(a, "ich9-usb-ehci1") {
		t.Errorf("with EHCI: %q (%v)", a, err)
	}
	c.NoSerial = true
	if a, err = c.Args(); err != nil || value(a, "-serial") != "none" {
		t.Errorf("without serial ports: %q (%v)", a, err)
	}
	c.NoSerial = false
	c.COM2, c.SPCR = true, "/tmp/spcr.bin"
	if a, err = c.Args(); err != nil || value(a, "-serial") != "null" || value(a, "-acpitable") != "sig=SPCR,rev=2,data=/tmp/spcr.bin" {
		t.Errorf("with the console on COM2 and an SPCR: %q (%v)", a, err)
	}
}

func TestArgsBadInput(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"no kernel":     func(c *Config) { c.Kernel = "" },
		"igc":           func(c *Config) { c.NIC = NICs[2] },
		"smp 0":         func(c *Config) { c.SMP = 0 },
		"tiny memory":   func(c *Config) { c.MemMiB = 16 },
		"port 0":        func(c *Config) { c.Forward = []Forward{{0, 80}} },
		"port 70000":    func(c *Config) { c.Forward = []Forward{{8080, 70000}} },
		"comma in pcap": func(c *Config) { c.Pcap = "a,b.pcap" },
		"stream with forwards": func(c *Config) {
			c.Stream, c.Forward = "/tmp/s", []Forward{{8080, 80}}
		},
		"comma in stream":           func(c *Config) { c.Stream, c.Forward = "/tmp/a,b", nil },
		"comma in SPCR":             func(c *Config) { c.SPCR = "/tmp/a,b" },
		"COM2 without serial ports": func(c *Config) { c.COM2, c.NoSerial = true, true },
	} {
		c := config(t)
		mutate(&c)
		if _, err := c.Args(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLookupNIC(t *testing.T) {
	if n, err := LookupNIC("igb"); err != nil || n.Device != "igb" || n.MinVer != 8 {
		t.Fatalf("igb: %+v, %v", n, err)
	}
	_, err := LookupNIC("igc")
	if !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "-machine sim") {
		t.Fatalf("igc: err = %v, want ErrNoModel pointing to -machine sim", err)
	}
	if _, err := LookupNIC("rtl8139"); err == nil || !strings.Contains(err.Error(), "e1000e, igb, igc") {
		t.Fatalf("unknown NIC: err = %v", err)
	}
}

// fakeQEMU writes a script that answers --version like QEMU version v.
func fakeQEMU(t *testing.T, v string) string {
	p := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	script := "#!/bin/sh\necho 'QEMU emulator version " + v + " (Debian)'\necho 'Copyright (c) 2003-2025'\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheck(t *testing.T) {
	igb, _ := LookupNIC("igb")
	e1000e, _ := LookupNIC("e1000e")
	old := fakeQEMU(t, "7.2.15")
	if _, err := Check(old, e1000e); err != nil {
		t.Errorf("QEMU 7.2 with e1000e: %v", err)
	}
	if _, err := Check(old, igb); !errors.Is(err, ErrNoQEMU) || !strings.Contains(err.Error(), "tools/run") {
		t.Errorf("QEMU 7.2 with igb: err = %v, want ErrNoQEMU saying to run tools/run", err)
	}
	if ExtendedInterrupts(old) || !ExtendedInterrupts(fakeQEMU(t, "9.0.0")) {
		t.Errorf("extended interrupt mode: want it from QEMU 9.0, not before")
	}
	if _, err := Check(fakeQEMU(t, "10.0.2"), igb); err != nil {
		t.Errorf("QEMU 10.0.2 with igb: %v", err)
	}
	if _, err := Check(filepath.Join(t.TempDir(), "no-such-qemu"), e1000e); !errors.Is(err, ErrNoQEMU) {
		t.Errorf("missing binary: err = %v, want ErrNoQEMU", err)
	}
}

// TestArgsDisk: a disk boot has no -kernel; the firmware's code is read
// only, its variables a snapshot, and the disk a removable USB stick the
// firmware boots first.
func TestArgsDisk(t *testing.T) {
	c := config(t)
	c.Kernel, c.Initrd, c.Cmdline = "", "", ""
	c.Disk = "/out/ether9.img"
	c.Firmware = Firmware{Code: "/fw/CODE.fd", Vars: "/fw/VARS.fd"}
	a, err := c.Args()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"-kernel", "-initrd", "-append"} {
		if slices.Contains(a, f) {
			t.Errorf("disk boot has %s", f)
		}
	}
	var drives, devices []string
	for i := range a {
		switch a[i] {
		case "-drive":
			drives = append(drives, a[i+1])
		case "-device":
			devices = append(devices, a[i+1])
		}
	}
	wantDrives := []string{
		"if=pflash,format=raw,unit=0,readonly=on,file=/fw/CODE.fd",
		"if=pflash,format=raw,unit=1,snapshot=on,file=/fw/VARS.fd",
		"if=none,id=stick,format=raw,readonly=on,file=/out/ether9.img",
	}
	if !slices.Equal(drives, wantDrives) {
		t.Errorf("drives %q, want %q", drives, wantDrives)
	}
	if !slices.Contains(devices, "usb-storage,bus=xhci.0,drive=stick,removable=on,bootindex=0") || !slices.Contains(devices, "intel-iommu") {
		t.Errorf("devices %q", devices)
	}

	for name, mutate := range map[string]func(*Config){
		"kernel too":       func(c *Config) { c.Kernel = "/k/vmlinux" },
		"cmdline too":      func(c *Config) { c.Cmdline = "console=ttyS0" },
		"no firmware":      func(c *Config) { c.Firmware = Firmware{} },
		"comma in disk":    func(c *Config) { c.Disk = "/a,b.img" },
		"comma in vars":    func(c *Config) { c.Firmware.Vars = "/a,b.fd" },
		"no firmware code": func(c *Config) { c.Firmware.Code = "" },
		"a bios too":       func(c *Config) { c.BIOS = "/fw/qboot.rom" },
	} {
		d := c
		mutate(&d)
		if _, err := d.Args(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestFindOVMF(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("fd"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code4m := touch("OVMF_CODE_4M.fd")
	code, vars := touch("OVMF_CODE.fd"), touch("OVMF_VARS.fd")
	cands := []Firmware{{code4m, filepath.Join(dir, "OVMF_VARS_4M.fd")}, {code, vars}}
	f, err := FindOVMF(cands)
	if err != nil || f != (Firmware{code, vars}) {
		t.Fatalf("FindOVMF = %+v, %v: want the pair whose both files exist", f, err)
	}
	if _, err := FindOVMF(cands[:1]); !errors.Is(err, ErrNoFirmware) || !strings.Contains(err.Error(), "ovmf") {
		t.Fatalf("no complete pair: err = %v", err)
	}
}
