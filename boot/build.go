package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ether9/ether9/boot/image"
	"github.com/ether9/ether9/boot/qemu"
)

// parts are the files one boot needs.
type parts struct {
	dir     string // temporary directory holding init and the initramfs
	init    string // the /init binary
	initrd  string // the initramfs
	kernel  string // the kernel found (bzImage or vmlinux)
	boot    string // what QEMU boots: the cached vmlinux, or kernel
	cmdline string
	// disk, with -disk, is the disk image QEMU boots instead, through
	// firmware; cmdline is then the one baked into it.
	disk     string
	firmware qemu.Firmware
	// bios is the legacy firmware QEMU runs before a kernel boot; empty:
	// QEMU's own, SeaBIOS.
	bios string
}

// newParts makes the scratch directory ether9-KIND-* that /init and the
// initramfs are built in, for kernel booted with cmdline.
func newParts(kind, kernel, cmdline string) (*parts, error) {
	dir, err := os.MkdirTemp("", "ether9-"+kind+"-")
	if err != nil {
		return nil, fmt.Errorf("scratch directory: %w", err)
	}
	return &parts{dir: dir, kernel: kernel, cmdline: cmdline,
		init: filepath.Join(dir, "init"), initrd: filepath.Join(dir, "initramfs.cpio")}, nil
}

func (p *parts) remove() {
	if p != nil && p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

// assemble builds /init and the initramfs, and finds and unpacks the
// kernel. extra words go on the kernel command line after -append's.
func assemble(ctx context.Context, o options, log io.Writer, extra ...string) (*parts, error) {
	switch {
	case o.platform == "metal":
		return assembleMetal(ctx, o, log, extra...)
	case o.driver == "linux":
		return assembleLinux(ctx, o, log)
	}
	cmdline, err := image.Cmdline(append([]string{o.appendTo}, extra...)...)
	if err != nil {
		return nil, err
	}
	cache, kernel, err := findKernel(o)
	if err != nil {
		return nil, err
	}
	p, err := newParts("boot", kernel, cmdline)
	if err != nil {
		return nil, err
	}
	if err := p.build(ctx, o.app, log); err != nil {
		p.remove()
		return nil, err
	}
	p.boot = p.bootable(kernel, cache, log)
	if o.disk {
		if err := p.makeDisk(ctx, o, log); err != nil {
			p.remove()
			return nil, err
		}
	}
	return p, nil
}

// findKernel returns the cache directory and the kernel to boot: -kernel,
// ETHER9_KERNEL, the cache, /boot.
func findKernel(o options) (cache, kernel string, err error) {
	if cache, err = image.CacheDir(); err != nil {
		return "", "", err
	}
	kernel, err = image.FindKernel(image.KernelSearch{
		Flag: o.kernel, Env: os.Getenv("ETHER9_KERNEL"), Cache: cache, Boot: "/boot",
	})
	return cache, kernel, err
}

// bootable returns what QEMU boots for kernel: its cached vmlinux, or
// the bzImage itself when that cannot be made.
func (p *parts) bootable(kernel, cache string, log io.Writer) string {
	t := time.Now()
	boot, note, err := image.Bootable(kernel, cache)
	if err != nil {
		// The bzImage still boots, only slower: say why and go on.
		fmt.Fprintf(log, "boot: booting the compressed kernel (slower under TCG): %v\n", err)
		boot, note = kernel, "bzImage"
	}
	fmt.Fprintf(log, "boot: kernel %s: %s (%.1fs)\n", kernel, note, time.Since(t).Seconds())
	return boot
}

func (p *parts) build(ctx context.Context, pkg string, log io.Writer) error {
	t := time.Now()
	if err := buildApp(ctx, pkg, p.init); err != nil {
		return err
	}
	bin, err := os.ReadFile(p.init)
	if err != nil {
		return fmt.Errorf("reading /init: %w", err)
	}
	// Without the interrupt modules the machine still runs, polling.
	mods, err := image.FindModules(p.kernel)
	if err != nil {
		fmt.Fprintf(log, "boot: %v: the NICs will poll\n", err)
	}
	var cpio bytes.Buffer
	if err := image.WriteInitramfs(&cpio, bin, mods...); err != nil {
		return err
	}
	if err := os.WriteFile(p.initrd, cpio.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing initramfs: %w", err)
	}
	fmt.Fprintf(log, "boot: /init from %s: %.1f MB, initramfs %.1f MB with %d modules (%.1fs)\n",
		pkg, float64(len(bin))/1e6, float64(cpio.Len())/1e6, len(mods), time.Since(t).Seconds())
	return nil
}

// Where programs come from.
const (
	defaultApp = "./boot/init" // the status server
	xdpInit    = "./boot/xdpinit"
)

// buildApp builds the program app as a static linux/amd64 binary at out.
// A directory ("./examples/hello", "../mybox", "/src/mybox") is built in
// its own module, which may be the user's own requiring ether9; relative
// ones are taken from ETHER9_WD (where tools/run was started) or else the
// root of the working directory's module, where an import path is built. A program that does not compile says why, before anything boots.
func buildApp(ctx context.Context, app, out string) error {
	root, err := image.ModuleRoot(ctx, ".")
	if err != nil {
		return err
	}
	dir, pkg := root, app
	if isDir(app) {
		if !filepath.IsAbs(app) {
			base := os.Getenv("ETHER9_WD")
			if base == "" {
				base = root
			}
			app = filepath.Join(base, app)
		}
		st, err := os.Stat(app)
		if err != nil {
			return fmt.Errorf("-app: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("-app %s: not a directory", app)
		}
		dir, pkg = app, "."
	}
	if err := image.Build(ctx, dir, pkg, out); err != nil {
		return fmt.Errorf("-app: %w", err)
	}
	// go build -o of a library writes its archive, not a program.
	f, err := os.Open(out)
	if err != nil {
		return fmt.Errorf("-app %s: built nothing: not a command (package main)", app)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "\x7fELF" {
		return fmt.Errorf("-app %s: not a command (package main)", app)
	}
	return nil
}

// isDir says whether app names a directory rather than an import path.
func isDir(app string) bool {
	return app == "." || app == ".." || strings.HasPrefix(app, "./") || strings.HasPrefix(app, "../") || filepath.IsAbs(app)
}
