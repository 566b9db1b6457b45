package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ether9/ether9/boot/grub"
	"github.com/ether9/ether9/boot/image"
)

// needGRUB skips a test when grub-mkimage or GRUB's x86_64-efi modules
// are missing, except under CI=true, where tools/test installed them.
func needGRUB(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath(grub.Mkimage)
	if err == nil {
		_, err = os.Stat(filepath.Join(grub.ModuleDir, "multiboot2.mod"))
	}
	needInstalled(t, err, "grub-efi-amd64-bin")
}

// TestWriteOutMetal: -o on the metal platform writes the disk image
// (GRUB as the boot program, the shim and /init beside it, the
// configuration carrying the command line) and the files another loader
// boots, all the same bytes; a word GRUB would change stops it before
// any file is written.
func TestWriteOutMetal(t *testing.T) {
	needShimTools(t)
	needGRUB(t)
	dir := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	args := []string{"-platform", "metal", "-o", dir, "-app", "./boot/testdata/hello", "-append", "ether9.test=$x;y"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	cmdline := image.MetalBaseCmdline + " ether9.test=$x;y"
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if got := string(read("cmdline")); got != cmdline+"\n" {
		t.Errorf("cmdline %q, want %q", got, cmdline)
	}
	img := filepath.Join(dir, diskName)
	for esp, name := range map[string]string{grub.ShimPath: "shim.elf", grub.InitPath: "init"} {
		got, err := image.ReadFile(img, esp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, read(name)) {
			t.Errorf("%s on the ESP (%d bytes) is not %s (%d bytes)", esp, len(got), name, len(read(name)))
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "init")); st.Mode().Perm() != 0o755 {
		t.Errorf("init mode %v, want 0755", st.Mode().Perm())
	}
	prog, err := image.ReadBootProgram(img)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := grub.Config(cmdline)
	if err != nil {
		t.Fatal(err)
	}
	if string(prog[:2]) != "MZ" || !bytes.Contains(prog, []byte(cfg)) {
		t.Errorf("%s is not GRUB with the configuration for %q built in", image.BootPath, cmdline)
	}
	if entry := string(read("grub.cfg")); !strings.Contains(entry, "multiboot2 /ether9/shim.elf ") || !strings.Contains(entry, "'ether9.test=$x;y'") {
		t.Errorf("grub.cfg does not boot /ether9/shim.elf with the quoted words:\n%s", entry)
	}
	for _, w := range []string{"shim.elf", "module2", "-kernel " + dir + "/shim.elf -initrd " + dir + "/init"} {
		if !strings.Contains(stdout.String()+string(read("grub.cfg")), w) {
			t.Errorf("the instructions lack %q:\n%s", w, stdout.String())
		}
	}

	bad := filepath.Join(t.TempDir(), "bad")
	stderr.Reset()
	args = []string{"-platform", "metal", "-o", bad, "-app", "./boot/testdata/hello", "-append", `ether9.test=a"b`}
	if code := run(args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "cannot go through GRUB unchanged") {
		t.Errorf("a word with a quote: exit %d, %s", code, stderr.String())
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("-o wrote %s before refusing", bad)
	}
}

// TestSelftestMetalDisk boots the metal platform as a machine would:
// OVMF starts GRUB from ether9.img on a USB stick, GRUB starts the shim
// through Multiboot2 with /init as its module, and the self-test passes
// (VT-d on, DHCP, 16 MiB each way, no DMAR fault). A word GRUB's parser
// would expand must reach /init as it was.
func TestSelftestMetalDisk(t *testing.T) {
	needShimTools(t)
	needQEMU(t, "e1000e")
	needOVMF(t)
	needGRUB(t)
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	o := testOptions("e1000e", "./boot/init")
	o.platform, o.disk = "metal", true
	const hostile = "metal.test=${prefix};#x"
	o.appendTo = hostile
	r, console := mustSelftest(t, o, "")
	console = strings.ReplaceAll(console, "\r", "")
	for _, w := range []string{
		`BdsDxe: starting Boot0001 "UEFI QEMU QEMU USB HARDDRIVE`,
		"metal: booted through GRUB",
		"ether9: boot line: " + image.MetalBaseCmdline + " " + hostile + " ether9.token=" + r.token + " ether9.selftest\n",
	} {
		if !strings.Contains(console, w) {
			t.Errorf("console lacks %q", w)
		}
	}
	if strings.Contains(console, "GRUB could not start the shim") {
		t.Errorf("GRUB says it could not start the shim")
	}
}
