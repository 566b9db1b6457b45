// Command boot builds the ether9 image and boots it: /init from -app
// (./boot/init, the status server, by default),
// an initramfs, the kernel command line and a kernel, run in QEMU with the
// serial console on this terminal, or written out for real hardware.
//
//	go run ./boot [-app PKG] [-nic e1000e|igb|igc] [-machine qemu|sim] [-selftest] [-o DIR] ...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ether9/ether9/boot/uki"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command's flags.
type options struct {
	nic      string
	machine  string
	smp      int
	memMiB   int
	port     int
	portSet  bool
	ninePort int
	pcap     string
	kernel   string
	appendTo string
	token    string // the machine's ether9.token, set by withToken
	outDir   string
	selftest bool
	xdp      bool
	timeout  time.Duration
	irq      string // on, off (ether9.irq=off) or both (-selftest, one boot each)
	rounds   int    // of -irq, -platform and -driver both
	boot     string // kernel, disk or both (-selftest, one boot each)
	disk     bool   // this boot is ether9.img's, through UEFI firmware
	efiStub  string // systemd's EFI stub for ether9.img
	diskMiB  int    // ether9.img's size; 0: as small as fits
	platform string // linux (Linux boots /init), metal (the ring-0 shim does) or both (-selftest, one boot each)
	app      string // the package built as /init
	// driver says who drives the NIC: ether9, linux (the reference boot:
	// Linux's own driver and stack) or both (-selftest, one boot each).
	driver         string
	linuxIOMMUFlag string   // -linuxiommu as given
	linuxModes     []string // the reference boot's IOMMU modes, from it
	mib            int      // MiB the self-test moves each way
	ctl            []string // control lines POSTed before the self-test's transfers
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("boot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.nic, "nic", "e1000e", "NIC family: e1000e or igb in QEMU; igc only with -machine sim")
	fs.StringVar(&o.machine, "machine", "qemu", "qemu, or sim: run /init's code on the simulated machine as a host process")
	fs.IntVar(&o.smp, "smp", 1, "guest CPUs")
	fs.IntVar(&o.memMiB, "m", 1024, "guest memory in MiB")
	fs.IntVar(&o.port, "port", 8080, "host port on 127.0.0.1 forwarded to the guest's HTTP port 80 (0: any free port)")
	fs.IntVar(&o.ninePort, "9p", 0, "host port on 127.0.0.1 forwarded to the guest's 9P port 564 (0: none)")
	fs.StringVar(&o.pcap, "pcap", "", "record the guest's wire to this pcap file")
	fs.StringVar(&o.kernel, "kernel", "", "kernel to boot, bzImage or vmlinux (default: $ETHER9_KERNEL, the cache, /boot)")
	fs.StringVar(&o.appendTo, "append", "", "extra kernel command line, e.g. ether9.ip=10.0.2.15/24")
	fs.StringVar(&o.outDir, "o", "", "write ether9.img (a disk for a USB stick) and what other loaders boot (linux: vmlinuz, vmlinux, initramfs; metal: shim.elf, init, grub.cfg) and cmdline to this directory for hardware, and boot nothing")
	fs.BoolVar(&o.selftest, "selftest", false, "boot, check the status page, move 16 MiB each way with SHA-256, check for DMAR faults, report timings")
	fs.BoolVar(&o.xdp, "xdp", false, "boot with two more igb NICs on a hub, run rxdrop, txpush and l2fwd over netstack, copy and zero-copy queues in the guest, print the Kpps table")
	fs.StringVar(&o.irq, "irq", "on", "on: NICs take their interrupt; off: they poll (ether9.irq=off); both: -selftest boots once each way and compares")
	fs.IntVar(&o.rounds, "rounds", 1, "with -irq, -platform or -driver both: how many rounds of one boot each way")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "give up the self-test this long after QEMU starts")
	fs.StringVar(&o.boot, "boot", "kernel", "kernel: QEMU loads the kernel itself; disk: boot ether9.img, the disk -o writes, as a USB stick under UEFI firmware (OVMF); both: -selftest boots once each way and compares")
	fs.StringVar(&o.efiStub, "efistub", uki.DefaultStub, "systemd's EFI stub that ether9.img's boot program is made from (Debian's systemd-boot-efi)")
	fs.IntVar(&o.diskMiB, "disksize", 0, "size of ether9.img in MiB (0: as small as fits)")
	fs.StringVar(&o.platform, "platform", "linux", "linux: Linux boots /init; metal: /init runs in ring 0 on the shim in kernel/metal/shim, no Linux; both: -selftest boots once each way and compares")
	fs.StringVar(&o.driver, "driver", "ether9", "who drives the NIC: ether9; linux: the reference boot, the same kernel with its own e1000e or igb driver and TCP/IP stack serving the self-test's endpoints; both: -selftest boots each way and compares")
	fs.StringVar(&o.linuxIOMMUFlag, "linuxiommu", "", "the reference boot's VT-d: off (intel_iommu=off), strict (iommu.strict=1), lazy (a flush queue); with -driver both a comma list, one boot each per round (default off,strict; -driver linux: off)")
	fs.IntVar(&o.mib, "mib", 16, "MiB the self-test pulls and pushes")
	ctl := fs.String("ctl", "", "control lines the self-test POSTs to the guest's /ctl before its transfers, ';' between them, e.g. 'ether0 csum audit on; ether0 copybreak 2048'")
	fs.StringVar(&o.app, "app", defaultApp, "the program built as /init: a package path, or a directory (of this module or of your own module requiring ether9)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./boot [flags]   (tools/run installs QEMU and a kernel first)\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (kernel options go in -append)", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { o.portSet = o.portSet || f.Name == "port" })
	switch o.machine {
	case "qemu", "sim":
	default:
		return o, fmt.Errorf("-machine %q: want qemu or sim", o.machine)
	}
	if o.port < 0 || o.port > 65535 || o.ninePort < 0 || o.ninePort > 65535 {
		return o, fmt.Errorf("ports are 0..65535")
	}
	if o.xdp && (o.selftest || o.outDir != "" || o.machine != "qemu" || o.boot != "kernel") {
		return o, fmt.Errorf("-xdp runs alone in QEMU: not with -selftest, -o, -boot or -machine sim")
	}
	if o.diskMiB < 0 {
		return o, fmt.Errorf("-disksize %d: want 0 (fit) or a size in MiB", o.diskMiB)
	}
	switch o.boot {
	case "kernel":
	case "disk", "both":
		if o.outDir != "" || o.machine != "qemu" {
			return o, fmt.Errorf("-boot %s boots ether9.img in QEMU: -o writes it without booting, -machine sim has no disk", o.boot)
		}
		if o.boot == "both" && (!o.selftest || o.irq == "both") {
			return o, fmt.Errorf("-boot both compares two self-tests: it needs -selftest, and -irq on or off")
		}
		o.disk = o.boot == "disk"
	default:
		return o, fmt.Errorf("-boot %q: want kernel, disk or both", o.boot)
	}
	switch o.irq {
	case "on", "off":
	case "both":
		if !o.selftest || o.machine != "qemu" {
			return o, fmt.Errorf("-irq both compares two self-tests in QEMU: it needs -selftest and -machine qemu")
		}
	default:
		return o, fmt.Errorf("-irq %q: want on, off or both", o.irq)
	}
	if err := checkPlatform(o); err != nil {
		return o, err
	}
	if err := checkDriver(&o); err != nil {
		return o, err
	}
	if o.mib < 1 || o.mib > 1024 {
		return o, fmt.Errorf("-mib %d: want 1 to 1024", o.mib)
	}
	if o.rounds < 1 {
		return o, fmt.Errorf("-rounds %d: want at least 1", o.rounds)
	}
	if o.selftest && o.outDir != "" {
		return o, fmt.Errorf("-selftest and -o do not go together: -o boots nothing")
	}
	for _, l := range strings.Split(*ctl, ";") {
		if l = strings.TrimSpace(l); l != "" {
			o.ctl = append(o.ctl, l)
		}
	}
	if len(o.ctl) > 0 && (!o.selftest || o.driver != "ether9") {
		return o, fmt.Errorf("-ctl is for ether9's self-test: it needs -selftest, and -driver ether9 (Linux's reference /init takes no control lines)")
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "boot: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	switch {
	case o.xdp:
		t, err := xdpBoot(ctx, o, stderr)
		if t != nil {
			t.print(stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "boot: %v\n", err)
			return 1
		}
		return 0
	case o.selftest:
		switch {
		case o.machine == "sim":
			err = runSim(ctx, o, stdout, stderr)
		case o.irq == "both":
			err = compareIRQ(ctx, o, stdout)
		case o.boot == "both":
			err = compareBoot(ctx, o, stdout)
		case o.platform == "both":
			err = comparePlatforms(ctx, o, stdout)
		case o.driver == "both":
			err = compareDrivers(ctx, o, stdout)
		default:
			var r *report
			r, err = selftest(ctx, o, stdout)
			if r != nil {
				r.print(stdout)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "boot: %v\n", err)
			fmt.Fprintf(stdout, "selftest: FAIL: %s\n", oneLine(err))
			return 1
		}
		fmt.Fprintln(stdout, "selftest: PASS")
		return 0
	case o.machine == "sim":
		err = runSim(ctx, o, stdout, stderr)
	case o.outDir != "":
		err = writeOut(ctx, o, stdout)
	default:
		err = boot(ctx, o, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "boot: %v\n", err)
		return 1
	}
	return 0
}

// oneLine keeps the first line of an error for the verdict line; the rest
// (console tails, compiler output) was printed before it.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
