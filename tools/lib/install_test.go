// Package lib_test checks tools/lib/install.sh against stand-ins for apt,
// dpkg and QEMU, so that the install logic is tested without touching the
// machine's packages.
package lib_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin writes an executable script name into dir.
func fakeBin(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// shell runs fn from install.sh with PATH starting at bin and the cache
// under cache; it returns the combined output and the error.
func shell(t *testing.T, bin, cache, fn string, env ...string) (string, error) {
	t.Helper()
	lib, err := filepath.Abs("install.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", ". "+lib+" && "+fn)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "XDG_CACHE_HOME="+cache)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kernelDeb builds a real .deb shaped like linux-image-6.1.0-57-amd64.
func kernelDeb(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("skipping: no dpkg-deb on this machine")
	}
	root := filepath.Join(dir, "pkg")
	for _, f := range []struct{ path, body string }{
		{"DEBIAN/control", "Package: linux-image-6.1.0-57-amd64\nVersion: 6.1.158-1\nArchitecture: amd64\nMaintainer: test <t@example.org>\nDescription: test kernel\n"},
		{"boot/vmlinuz-6.1.0-57-amd64", "bzImage stand-in"},
		{"boot/config-6.1.0-57-amd64", "CONFIG_PVH=y\n"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko", "e1000e"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/net/ethernet/intel/igb/igb.ko", "igb"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/net/ethernet/intel/igc/igc.ko", "igc, not kept"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/dca/dca.ko", "dca"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/i2c/algos/i2c-algo-bit.ko", "i2c-algo-bit"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/i2c/algos/i2c-algo-pca.ko", "not kept"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/uio/uio.ko", "uio"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/uio/uio_pci_generic.ko", "uio_pci_generic"},
		{"lib/modules/6.1.0-57-amd64/kernel/drivers/uio/uio_pdrv_genirq.ko", "other uio"},
		{"usr/share/doc/linux-image-6.1.0-57-amd64/copyright", "GPL"},
	} {
		p := filepath.Join(root, f.path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deb := filepath.Join(dir, "linux-image-6.1.0-57-amd64_6.1.158-1_amd64.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v\n%s", err, out)
	}
	return deb
}

func TestInstallKernel(t *testing.T) {
	dir := t.TempDir()
	bin, cache := filepath.Join(dir, "bin"), filepath.Join(dir, "cache")
	os.MkdirAll(bin, 0o755)
	deb := kernelDeb(t, dir)
	calls := filepath.Join(dir, "apt-get.calls")
	fakeBin(t, bin, "apt-cache", `[ "$1 $2" = "depends linux-image-amd64" ] || exit 1
printf 'linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n  Depends: firmware-linux-free\n'
`)
	fakeBin(t, bin, "apt-get", `echo "$*" >> `+calls+`
case "$*" in
*download*linux-image-6.1.0-57-amd64) cp `+deb+` . ;;
*) exit 1 ;;
esac
`)
	if out, err := shell(t, bin, cache, "e9_install_kernel"); err != nil {
		t.Fatalf("e9_install_kernel: %v\n%s", err, out)
	}
	pkg := filepath.Join(cache, "ether9", "kernel", "linux-image-6.1.0-57-amd64")
	if b, err := os.ReadFile(filepath.Join(pkg, "boot", "vmlinuz-6.1.0-57-amd64")); err != nil || string(b) != "bzImage stand-in" {
		t.Fatalf("kernel not unpacked into the cache: %q, %v", b, err)
	}
	// Of the module tree only uio and uio_pci_generic (the NICs' legacy
	// interrupt) and Linux's own e1000e and igb with igb's dependencies
	// (the reference boot) stay.
	var kept []string
	filepath.Walk(filepath.Join(pkg, "lib"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(pkg, p)
			kept = append(kept, rel)
		}
		return nil
	})
	var want []string
	for _, m := range []string{"dca/dca", "i2c/algos/i2c-algo-bit", "net/ethernet/intel/e1000e/e1000e",
		"net/ethernet/intel/igb/igb", "uio/uio", "uio/uio_pci_generic"} {
		want = append(want, "lib/modules/6.1.0-57-amd64/kernel/drivers/"+m+".ko")
	}
	if got := strings.Join(kept, " "); got != strings.Join(want, " ") {
		t.Errorf("modules kept in the cache: %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(pkg, "usr")); !os.IsNotExist(err) {
		t.Errorf("usr kept in the cache (stat: %v)", err)
	}
	out, err := shell(t, bin, cache, "e9_kernel_cached")
	if err != nil || strings.TrimSpace(out) != filepath.Join(pkg, "boot", "vmlinuz-6.1.0-57-amd64") {
		t.Fatalf("e9_kernel_cached = %q, %v", out, err)
	}

	// A second run finds the kernel and fetches nothing.
	os.Remove(calls)
	if out, err := shell(t, bin, cache, "e9_install_kernel"); err != nil {
		t.Fatalf("second e9_install_kernel: %v\n%s", err, out)
	}
	if _, err := os.Stat(calls); !os.IsNotExist(err) {
		b, _ := os.ReadFile(calls)
		t.Fatalf("second run called apt-get: %s", b)
	}

	// A cache written before the modules were kept lacks them: the kernel
	// is fetched again rather than booted with no interrupt.
	os.RemoveAll(filepath.Join(pkg, "lib"))
	if out, err := shell(t, bin, cache, "e9_kernel_cached"); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("e9_kernel_cached on a cache without modules = %q, %v; want nothing", out, err)
	}
	if out, err := shell(t, bin, cache, "e9_install_kernel"); err != nil {
		t.Fatalf("e9_install_kernel over a cache without modules: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(pkg, "lib/modules/6.1.0-57-amd64/kernel/drivers/uio/uio_pci_generic.ko")); err != nil {
		t.Fatalf("refetch did not keep the modules: %v", err)
	}

	// A cache kept before Linux's NIC drivers were lacks igb: fetched again.
	os.Remove(filepath.Join(pkg, "lib/modules/6.1.0-57-amd64/kernel/drivers/net/ethernet/intel/igb/igb.ko"))
	if out, err := shell(t, bin, cache, "e9_kernel_cached"); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("e9_kernel_cached on a cache without igb = %q, %v; want nothing", out, err)
	}
	if out, err := shell(t, bin, cache, "e9_install_kernel"); err != nil {
		t.Fatalf("e9_install_kernel over a cache without igb: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(pkg, "lib/modules/6.1.0-57-amd64/kernel/drivers/net/ethernet/intel/igb/igb.ko")); err != nil {
		t.Fatalf("refetch did not keep igb: %v", err)
	}
}

func TestInstallKernelDownloadFails(t *testing.T) {
	dir := t.TempDir()
	bin, cache := filepath.Join(dir, "bin"), filepath.Join(dir, "cache")
	os.MkdirAll(bin, 0o755)
	fakeBin(t, bin, "apt-cache", `printf 'linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n'`)
	fakeBin(t, bin, "apt-get", `exit 100`)
	fakeBin(t, bin, "dpkg-deb", `exit 2`)
	out, err := shell(t, bin, cache, "e9_install_kernel")
	if err == nil || !strings.Contains(out, "apt-get download linux-image-6.1.0-57-amd64 failed") {
		t.Fatalf("err = %v, output %q: want a clear failure", err, out)
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "ether9", "kernel", "*")); len(m) != 0 {
		t.Fatalf("failed fetch left %q in the cache", m)
	}
}

func TestInstallQEMU(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	osr := filepath.Join(dir, "os-release")
	os.WriteFile(osr, []byte("ID=debian\nVERSION_CODENAME=trixie\n"), 0o644)
	fakeBin(t, bin, "apt-get", `echo "apt-get must not run" >&2; exit 1`)

	fakeBin(t, bin, "qemu-system-x86_64", `echo 'QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2)'`)
	if out, err := shell(t, bin, dir, "e9_install_qemu", "ETHER9_OS_RELEASE="+osr); err != nil {
		t.Fatalf("QEMU 10 present: %v\n%s", err, out)
	}

	// Too old, and not bookworm: say what to do instead of guessing.
	fakeBin(t, bin, "qemu-system-x86_64", `echo 'QEMU emulator version 7.2.15 (Debian 1:7.2+dfsg-7)'`)
	out, err := shell(t, bin, dir, "e9_install_qemu", "ETHER9_OS_RELEASE="+osr)
	if err == nil || !strings.Contains(out, "found: 7") || !strings.Contains(out, "install qemu-system-x86") {
		t.Fatalf("QEMU 7 on trixie: err = %v, output %q", err, out)
	}
}

func TestInstallUEFI(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	code := filepath.Join(dir, "share/OVMF/OVMF_CODE_4M.fd")
	stub := filepath.Join(dir, "lib/systemd/boot/efi/linuxx64.efi.stub")
	grub := filepath.Join(dir, "lib/grub/x86_64-efi/multiboot2.mod")
	env := []string{"ETHER9_OVMF_CODE=" + code, "ETHER9_EFI_STUB=" + stub, "ETHER9_GRUB_EFI=" + grub}
	calls := filepath.Join(dir, "apt-get.calls")
	// The stand-in installs the three files as the packages would.
	fakeBin(t, bin, "apt-get", `echo "$*" >> `+calls+`
case "$*" in
update*) ;;
*install*ovmf*systemd-boot-efi*grub-efi-amd64-bin*) mkdir -p `+filepath.Dir(code)+` `+filepath.Dir(stub)+` `+filepath.Dir(grub)+` && touch `+code+` `+stub+` `+grub+` ;;
*) exit 1 ;;
esac
`)
	if out, err := shell(t, bin, dir, "e9_install_uefi", env...); err != nil {
		t.Fatalf("e9_install_uefi: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), "install -y -qq --no-install-recommends ovmf systemd-boot-efi grub-efi-amd64-bin") {
		t.Fatalf("apt-get calls %q: want one install of ovmf, systemd-boot-efi and grub-efi-amd64-bin", b)
	}

	// All three files there: nothing is installed.
	os.Remove(calls)
	if out, err := shell(t, bin, dir, "e9_install_uefi", env...); err != nil {
		t.Fatalf("second e9_install_uefi: %v\n%s", err, out)
	}
	if _, err := os.Stat(calls); !os.IsNotExist(err) {
		b, _ := os.ReadFile(calls)
		t.Fatalf("second run called apt-get: %s", b)
	}

	// A package that installs without the file we need is a clear failure.
	os.Remove(stub)
	fakeBin(t, bin, "apt-get", `exit 0`)
	out, err := shell(t, bin, dir, "e9_install_uefi", env...)
	if err == nil || !strings.Contains(out, "systemd-boot-efi is installed but "+stub+" is missing") {
		t.Fatalf("stub still missing: err = %v, output %q", err, out)
	}
	// GRUB alone missing (a machine set up before the metal image) is
	// installed too.
	if err := os.WriteFile(stub, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(grub)
	out, err = shell(t, bin, dir, "e9_install_uefi", env...)
	if err == nil || !strings.Contains(out, "grub-efi-amd64-bin is installed but "+grub+" is missing") {
		t.Fatalf("grub still missing: err = %v, output %q", err, out)
	}
	fakeBin(t, bin, "apt-get", `case "$*" in update*) ;; *) exit 100 ;; esac`)
	out, err = shell(t, bin, dir, "e9_install_uefi", env...)
	if err == nil || !strings.Contains(out, "apt-get install ovmf systemd-boot-efi grub-efi-amd64-bin failed") {
		t.Fatalf("install fails: err = %v, output %q", err, out)
	}
}

func TestInstallGCC(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	// A name no machine has, so the real gcc does not count.
	env := []string{"ETHER9_GCC=ether9-test-gcc"}
	calls := filepath.Join(dir, "apt-get.calls")
	fakeBin(t, bin, "apt-get", `echo "$*" >> `+calls+`
case "$*" in
update*) ;;
*install*gcc) printf '#!/bin/sh\n' > `+filepath.Join(bin, "ether9-test-gcc")+` && chmod +x `+filepath.Join(bin, "ether9-test-gcc")+` ;;
*) exit 1 ;;
esac
`)
	if out, err := shell(t, bin, dir, "e9_install_gcc", env...); err != nil {
		t.Fatalf("e9_install_gcc: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), "install -y -qq --no-install-recommends gcc") {
		t.Fatalf("apt-get calls %q: want one install of gcc", b)
	}

	// gcc there: nothing is installed.
	os.Remove(calls)
	if out, err := shell(t, bin, dir, "e9_install_gcc", env...); err != nil {
		t.Fatalf("second e9_install_gcc: %v\n%s", err, out)
	}
	if _, err := os.Stat(calls); !os.IsNotExist(err) {
		b, _ := os.ReadFile(calls)
		t.Fatalf("second run called apt-get: %s", b)
	}

	// apt-get fails: say so.
	os.Remove(filepath.Join(bin, "ether9-test-gcc"))
	fakeBin(t, bin, "apt-get", `case "$*" in update*) ;; *) exit 100 ;; esac`)
	out, err := shell(t, bin, dir, "e9_install_gcc", env...)
	if err == nil || !strings.Contains(out, "apt-get install gcc failed") {
		t.Fatalf("err = %v, output %q: want a clear failure", err, out)
	}
}

func TestInstallTshark(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	// A name no machine has, so the real tshark does not count.
	env := []string{"ETHER9_TSHARK=ether9-test-tshark"}
	calls := filepath.Join(dir, "apt-get.calls")
	fakeBin(t, bin, "apt-get", `echo "$*" >> `+calls+`
case "$*" in
update*) ;;
*install*tshark) printf '#!/bin/sh\n' > `+filepath.Join(bin, "ether9-test-tshark")+` && chmod +x `+filepath.Join(bin, "ether9-test-tshark")+` ;;
*) exit 1 ;;
esac
`)
	if out, err := shell(t, bin, dir, "e9_install_tshark", env...); err != nil {
		t.Fatalf("e9_install_tshark: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), "install -y -qq --no-install-recommends tshark") {
		t.Fatalf("apt-get calls %q: want one install of tshark", b)
	}

	// tshark there: nothing is installed.
	os.Remove(calls)
	if out, err := shell(t, bin, dir, "e9_install_tshark", env...); err != nil {
		t.Fatalf("second e9_install_tshark: %v\n%s", err, out)
	}
	if _, err := os.Stat(calls); !os.IsNotExist(err) {
		b, _ := os.ReadFile(calls)
		t.Fatalf("second run called apt-get: %s", b)
	}

	// apt-get fails: say so.
	os.Remove(filepath.Join(bin, "ether9-test-tshark"))
	fakeBin(t, bin, "apt-get", `case "$*" in update*) ;; *) exit 100 ;; esac`)
	out, err := shell(t, bin, dir, "e9_install_tshark", env...)
	if err == nil || !strings.Contains(out, "apt-get install tshark failed") {
		t.Fatalf("err = %v, output %q: want a clear failure", err, out)
	}
}
