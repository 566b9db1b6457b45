package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/ether9/ether9/boot/image"
	"github.com/ether9/ether9/boot/qemu"
)

// shimDir holds the ring-0 shim's C and assembly, relative to the module
// root: no Go package lives there, so the go command leaves it alone.
const shimDir = "kernel/metal/shim"

// shimCFlags build freestanding code that never touches SSE registers
// (-mgeneral-regs-only: the shim does not save Go's XMM state on entry)
// and needs no red zone, no stack protector and no position independence
// (it runs at its link address, 1 MiB, in the identity map).
var shimCFlags = []string{
	"-O2", "-g", "-std=gnu11", "-ffreestanding", "-fno-builtin", "-nostdlib", "-static", "-no-pie",
	"-fno-pic", "-fno-pie", "-fno-stack-protector", "-fno-asynchronous-unwind-tables",
	"-mno-red-zone", "-mgeneral-regs-only",
	"-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
}

// errNoGCC says the shim cannot be built here.
var errNoGCC = errors.New("gcc not found")

// buildShim compiles and links the shim from root's sources into out
// with Debian's gcc and binutils.
func buildShim(ctx context.Context, root, out string) error {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return fmt.Errorf("%w: the metal platform's shim is C and assembly: run tools/run (it installs gcc) or apt-get install gcc", errNoGCC)
	}
	dir := filepath.Join(root, shimDir)
	var srcs []string
	for _, pat := range []string{"*.c", "*.S"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return err
		}
		srcs = append(srcs, m...)
	}
	if len(srcs) == 0 {
		return fmt.Errorf("no shim sources in %s", dir)
	}
	sort.Strings(srcs)
	args := append([]string{}, shimCFlags...)
	args = append(args, "-Wl,-T,"+filepath.Join(dir, "shim.ld"), "-Wl,--build-id=none",
		"-Wl,-z,noexecstack", "-Wl,--no-warn-rwx-segments", "-o", out)
	args = append(args, srcs...)
	cmd := exec.CommandContext(ctx, gcc, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the shim: gcc: %w\n%s", err, stderr.Bytes())
	}
	k, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("reading the shim: %w", err)
	}
	if err := image.CheckPVH(k); err != nil {
		return fmt.Errorf("the shim %s: %w", out, err)
	}
	return nil
}

// assembleMetal builds the parts of a boot on the metal platform: the
// shim is what QEMU boots (-kernel, through its PVH note) and /init, the
// unchanged Go binary, is its first PVH module (-initrd). A module rather
// than a blob linked into the shim: the shim stays one build for every
// program, and QEMU and boot loaders already hand a module over.
func assembleMetal(ctx context.Context, o options, log io.Writer, extra ...string) (*parts, error) {
	cmdline, err := image.MetalCmdline(append([]string{o.appendTo}, extra...)...)
	if err != nil {
		return nil, err
	}
	root, err := image.ModuleRoot(ctx, ".")
	if err != nil {
		return nil, err
	}
	p, err := newParts("metal", "", cmdline)
	if err != nil {
		return nil, err
	}
	// The shim is the kernel; /init is its module, with no initramfs.
	p.kernel = filepath.Join(p.dir, "shim.elf")
	p.boot, p.initrd = p.kernel, p.init
	p.bios = qemu.FindQboot()
	t := time.Now()
	if err := buildShim(ctx, root, p.kernel); err != nil {
		p.remove()
		return nil, err
	}
	shimTime := time.Since(t)
	t = time.Now()
	if err := buildApp(ctx, o.app, p.init); err != nil {
		p.remove()
		return nil, err
	}
	fi, err := os.Stat(p.init)
	if err != nil {
		p.remove()
		return nil, fmt.Errorf("reading /init: %w", err)
	}
	fmt.Fprintf(log, "boot: metal: shim from %s (%.1fs), /init from %s: %.1f MB (%.1fs)\n",
		shimDir, shimTime.Seconds(), o.app, float64(fi.Size())/1e6, time.Since(t).Seconds())
	if o.disk {
		if err := p.makeDisk(ctx, o, log); err != nil {
			p.remove()
			return nil, err
		}
	}
	return p, nil
}

// checkPlatform refuses what the metal platform cannot do yet: it runs
// on a machine or in QEMU, not the simulated machine, and both platforms
// compare in self-tests only, one comparison at a time.
func checkPlatform(o options) error {
	switch o.platform {
	case "linux":
		return nil
	case "metal", "both":
		if o.machine != "qemu" || o.xdp || o.irq == "both" {
			return fmt.Errorf("-platform %s: not with -machine sim, -xdp or -irq both, so far", o.platform)
		}
		if o.platform == "both" && (o.outDir != "" || o.boot == "both") {
			return fmt.Errorf("-platform both compares two self-tests: not with -o or -boot both")
		}
		if o.platform == "both" && !o.selftest {
			return fmt.Errorf("-platform both compares two self-tests: it needs -selftest")
		}
		return nil
	}
	return fmt.Errorf("-platform %q: want linux, metal or both", o.platform)
}

// comparePlatforms runs the self-test rounds times, each round once on
// each platform (which goes first alternates), prints every report and
// the two side by side with each round's ratio.
func comparePlatforms(ctx context.Context, o options, out io.Writer) error {
	rs, err := runRounds(ctx, o, out, []variant{
		{"-platform metal", func(o *options) { o.platform = "metal" }},
		{"-platform linux", func(o *options) { o.platform = "linux" }},
	})
	printComparison(out, "the ring-0 shim against Linux", [2]string{"metal", "linux"}, rs[0], rs[1])
	return err
}
