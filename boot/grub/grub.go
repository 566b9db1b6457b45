// Package grub makes the metal platform's UEFI boot program: GRUB for
// x86_64-efi (Debian's grub-efi-amd64-bin, put together by grub-mkimage)
// with a configuration built in that boots the shim through Multiboot2,
// /init as its module, on the serial console. GRUB reads both from the
// EFI system partition it was started from.
package grub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Where the files are on the EFI system partition.
const (
	ShimPath = "/shim.elf"
	InitPath = "/init"
)

// Mkimage is GRUB's image tool (grub-common, which grub-efi-amd64-bin
// depends on); ModuleDir holds the x86_64-efi modules it links in.
const (
	Mkimage   = "grub-mkimage"
	ModuleDir = "/usr/lib/grub/x86_64-efi"
)

// Modules are the GRUB modules the boot program carries: the partition
// table and file system the configuration's files are on, the loader,
// the serial terminal, and the commands the configuration runs.
var Modules = []string{"part_gpt", "fat", "multiboot2", "serial", "terminal", "echo", "boot"}

// ErrNoGRUB says GRUB's tool or its x86_64-efi modules are missing.
var ErrNoGRUB = errors.New("GRUB for x86_64-efi not found")

// ErrWord says a command line word cannot reach the shim as it is.
var ErrWord = errors.New("cannot go through GRUB unchanged")

// MaxCmdline is the longest command line the shim keeps (boot.c's
// boot_cmdline, less its NUL).
const MaxCmdline = 4095

// Args returns the command line's words quoted for GRUB's command
// parser: each in single quotes, inside which GRUB expands nothing ($,
// ;, #, { and } stay as they are). GRUB joins a loader's arguments with
// spaces and puts a backslash before every \, ' and " it passes on (its
// grub_create_loader_cmdline), so a word holding one would reach the
// shim changed; such words are refused, as are control characters (a
// newline would end the command) and bytes outside ASCII.
func Args(cmdline string) ([]string, error) {
	if len(cmdline) > MaxCmdline {
		return nil, fmt.Errorf("grub: command line of %d bytes: the shim keeps %d", len(cmdline), MaxCmdline)
	}
	var args []string
	for _, w := range strings.Split(cmdline, " ") {
		if w == "" {
			continue
		}
		for i := 0; i < len(w); i++ {
			c := w[i]
			switch {
			case c == '\\' || c == '\'' || c == '"':
				return nil, fmt.Errorf("grub: command line word %q %w: GRUB passes %c on as \\%c", w, ErrWord, c, c)
			case c < 0x20 || c >= 0x7f:
				return nil, fmt.Errorf("grub: command line word %q %w: byte %#02x is not printable ASCII", w, ErrWord, c)
			}
		}
		args = append(args, "'"+w+"'")
	}
	return args, nil
}

// Config returns the configuration built into the boot program. GRUB runs
// it line by line before anything else; if the shim does not start, the
// last line says so on the console and GRUB stays at its rescue prompt.
func Config(cmdline string) (string, error) {
	args, err := Args(cmdline)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# ether9, metal platform: the shim through Multiboot2, /init its module.\n")
	b.WriteString("serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1\n")
	b.WriteString("terminal_input serial console\n")
	b.WriteString("terminal_output serial\n")
	// No video mode: the shim's console is the serial port.
	b.WriteString("set gfxpayload=text\n")
	fmt.Fprintf(&b, "multiboot2 %s %s\n", ShimPath, strings.Join(args, " "))
	fmt.Fprintf(&b, "module2 %s\n", InitPath)
	b.WriteString("boot\n")
	b.WriteString("echo 'ether9: GRUB could not start the shim: see the errors above'\n")
	return b.String(), nil
}

// Menuentry returns a grub.cfg entry for a machine's own GRUB, booting
// shim.elf and init from dir (an absolute path on the disk GRUB's root
// names, such as /ether9).
func Menuentry(dir, cmdline string) (string, error) {
	args, err := Args(cmdline)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(dir, "/") || strings.ContainsAny(dir, " '\"\\$;#{}\n") {
		return "", fmt.Errorf("grub: directory %q: want an absolute path without spaces or GRUB's special characters", dir)
	}
	dir = strings.TrimSuffix(dir, "/")
	return fmt.Sprintf(`# ether9 on the metal platform: the ring-0 shim boots /init, no Linux.
# Copy shim.elf and init to %[1]s/ on a disk your GRUB reads and add this
# entry (to /etc/grub.d/40_custom, then update-grub, or to grub.cfg).
# The console is the serial port, 115200 8N1.
menuentry 'ether9 (metal)' {
	set gfxpayload=text
	multiboot2 %[1]s%[2]s %[3]s
	module2 %[1]s%[4]s
}
`, dir, ShimPath, strings.Join(args, " "), InitPath), nil
}

// Build returns GRUB's x86_64-efi boot program with cfg built in, made
// by grub-mkimage from moduleDir (ModuleDir unless testing).
func Build(ctx context.Context, moduleDir, cfg string) ([]byte, error) {
	tool, err := exec.LookPath(Mkimage)
	if err != nil {
		return nil, fmt.Errorf("%w: no %s: run tools/run, which installs Debian's grub-efi-amd64-bin, or apt-get install grub-efi-amd64-bin", ErrNoGRUB, Mkimage)
	}
	if _, err := os.Stat(filepath.Join(moduleDir, "multiboot2.mod")); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s/multiboot2.mod: run tools/run, which installs Debian's grub-efi-amd64-bin, or apt-get install grub-efi-amd64-bin", ErrNoGRUB, moduleDir)
	} else if err != nil {
		return nil, fmt.Errorf("grub: %w", err)
	}
	dir, err := os.MkdirTemp("", "ether9-grub-")
	if err != nil {
		return nil, fmt.Errorf("grub: %w", err)
	}
	defer os.RemoveAll(dir)
	cfgPath, out := filepath.Join(dir, "grub.cfg"), filepath.Join(dir, "BOOTX64.EFI")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("grub: %w", err)
	}
	// The prefix is where GRUB would look for more modules and a
	// grub.cfg of its own; the built-in configuration boots before.
	args := append([]string{"-O", "x86_64-efi", "-d", moduleDir, "-p", "/EFI/BOOT", "-c", cfgPath, "-o", out}, Modules...)
	cmd := exec.CommandContext(ctx, tool, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("grub: %s: %w\n%s", Mkimage, err, bytes.TrimSpace(stderr.Bytes()))
	}
	prog, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("grub: %w", err)
	}
	if len(prog) < 2 || string(prog[:2]) != "MZ" {
		return nil, fmt.Errorf("grub: %s wrote no PE image", Mkimage)
	}
	return prog, nil
}
