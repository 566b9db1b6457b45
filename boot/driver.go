package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ether9/ether9/boot/image"
)

// linuxRefApp is the reference boot's /init: Linux's own NIC driver and
// TCP/IP stack serving the self-test's endpoints.
const linuxRefApp = "github.com/ether9/ether9/boot/linuxref"

// linuxBaseCmdline is the reference boot's kernel command line before
// its IOMMU words: the same console and panic behaviour as ether9's, and
// no_timer_check: with interrupt remapping on (Linux keeps it even with
// intel_iommu=off, where ether9's line has intremap=off), the boot-time
// check that the timer ticks through the IO-APIC panicked one boot in
// nine on a loaded host ("timer doesn't work through Interrupt-remapped
// IO-APIC"), a TCG vCPU being too slow for its window.
const linuxBaseCmdline = "console=ttyS0 panic=-1 quiet no_timer_check"

// linuxIOMMU are the ways Linux's driver may run behind QEMU's VT-d unit:
// the kernel words each boots with, and the IOMMU group type its status
// page must then show ("off" when the NIC has no group).
var linuxIOMMU = map[string]struct{ words, group string }{
	"off":    {"intel_iommu=off", "off"},
	"strict": {"intel_iommu=on iommu.strict=1", "DMA"},    // an IOTLB invalidation per unmap, as ether9's strict
	"lazy":   {"intel_iommu=on iommu.strict=0", "DMA-FQ"}, // unmaps batched on a flush queue (Debian's default)
}

// parseLinuxIOMMU reads -linuxiommu: a comma list of linuxIOMMU's modes.
func parseLinuxIOMMU(s string) ([]string, error) {
	var modes []string
	for _, m := range strings.Split(s, ",") {
		if _, ok := linuxIOMMU[m]; !ok {
			return nil, fmt.Errorf("-linuxiommu %q: want a comma list of off, strict, lazy", s)
		}
		if slices.Contains(modes, m) {
			return nil, fmt.Errorf("-linuxiommu %q: %s twice", s, m)
		}
		modes = append(modes, m)
	}
	return modes, nil
}

// checkDriver checks -driver and -linuxiommu and fills in the modes.
func checkDriver(o *options) error {
	switch o.driver {
	case "ether9":
		return nil
	case "linux", "both":
	default:
		return fmt.Errorf("-driver %q: want ether9, linux or both", o.driver)
	}
	if o.machine != "qemu" || o.outDir != "" || o.boot != "kernel" || o.platform != "linux" || o.xdp || o.irq == "both" {
		return fmt.Errorf("-driver %s boots Linux's own driver in QEMU: not with -machine sim, -o, -boot disk or both, -platform metal or both, -xdp or -irq both", o.driver)
	}
	if o.driver == "both" && !o.selftest {
		return fmt.Errorf("-driver both compares two self-tests: it needs -selftest")
	}
	spec := o.linuxIOMMUFlag
	if spec == "" {
		spec = "off"
		if o.driver == "both" {
			spec = "off,strict"
		}
	}
	modes, err := parseLinuxIOMMU(spec)
	if err != nil {
		return err
	}
	if o.driver == "linux" && len(modes) != 1 {
		return fmt.Errorf("-driver linux boots once: give -linuxiommu one mode, not %q", spec)
	}
	o.linuxModes = modes
	return nil
}

// linuxCmdline is the reference boot's command line: the base, the IOMMU
// mode's words, the modules to load in order, then -append's words,
// which may not name the IOMMU (-linuxiommu does).
func linuxCmdline(mode string, modules []string, appendTo string) (string, error) {
	m, ok := linuxIOMMU[mode]
	if !ok {
		return "", fmt.Errorf("linux iommu mode %q: want off, strict or lazy", mode)
	}
	words := append(strings.Fields(linuxBaseCmdline), strings.Fields(m.words)...)
	words = append(words, "ref.modules="+strings.Join(modules, ","))
	for _, w := range strings.Fields(appendTo) {
		key, _, _ := strings.Cut(w, "=")
		switch key {
		case "intel_iommu", "intremap", "iommu", "iommu.strict", "iommu.passthrough":
			return "", fmt.Errorf("cmdline: %q: the reference boot's IOMMU is set by -linuxiommu", w)
		}
		words = append(words, w)
	}
	return strings.Join(words, " "), nil
}

// assembleLinux builds the reference boot: linuxRefApp as /init, and in
// the initramfs the NIC family's Linux driver with its dependencies from
// the kernel's own package.
func assembleLinux(ctx context.Context, o options, log io.Writer) (*parts, error) {
	cache, kernel, err := findKernel(o)
	if err != nil {
		return nil, err
	}
	mods, order, err := image.FindDriver(kernel, o.nic)
	if err != nil {
		return nil, fmt.Errorf("the reference boot needs Linux's %s driver: %w (tools/lib/install.sh keeps it in the kernel cache)", o.nic, err)
	}
	cmdline, err := linuxCmdline(o.linuxModes[0], order, o.appendTo)
	if err != nil {
		return nil, err
	}
	p, err := newParts("linuxref", kernel, cmdline)
	if err != nil {
		return nil, err
	}
	t := time.Now()
	if err := buildApp(ctx, linuxRefApp, p.init); err != nil {
		p.remove()
		return nil, err
	}
	bin, err := os.ReadFile(p.init)
	if err != nil {
		p.remove()
		return nil, fmt.Errorf("reading /init: %w", err)
	}
	var cpio bytes.Buffer
	if err := image.WriteInitramfs(&cpio, bin, mods...); err != nil {
		p.remove()
		return nil, err
	}
	if err := os.WriteFile(p.initrd, cpio.Bytes(), 0o644); err != nil {
		p.remove()
		return nil, fmt.Errorf("writing initramfs: %w", err)
	}
	fmt.Fprintf(log, "boot: reference /init (Linux's %s, modules %s, iommu %s): initramfs %.1f MB (%.1fs)\n",
		o.nic, strings.Join(order, " "), o.linuxModes[0], float64(cpio.Len())/1e6, time.Since(t).Seconds())
	p.boot = p.bootable(kernel, cache, log)
	return p, nil
}

// checkLinuxPage wants the reference's status page to show Linux's
// driver for nic bound and the IOMMU in mode, so that a comparison
// cannot quietly measure another set-up.
func checkLinuxPage(nic, mode string) func(page string) error {
	return func(page string) error {
		if want := "linux reference: driver " + nic + " "; !hasLine(page, want) {
			return fmt.Errorf("reference status page does not say %q:\n%s", want, page)
		}
		if want := "iommu " + linuxIOMMU[mode].group; !slices.Contains(strings.Split(page, "\n"), want) {
			return fmt.Errorf("reference status page does not say %q (-linuxiommu %s):\n%s", want, mode, page)
		}
		return nil
	}
}

// compareDrivers runs the self-test rounds times, each round once with
// ether9 and once with Linux's own driver in each IOMMU mode, and prints
// every report and, per mode, ether9 and Linux side by side with each
// round's ratio.
func compareDrivers(ctx context.Context, o options, out io.Writer) error {
	vs := []variant{{"-driver ether9", func(o *options) { o.driver, o.linuxModes = "ether9", nil }}}
	for _, mode := range o.linuxModes {
		vs = append(vs, variant{"-driver linux -linuxiommu " + mode, func(o *options) { o.driver, o.linuxModes = "linux", []string{mode} }})
	}
	rs, err := runRounds(ctx, o, out, vs)
	for i, mode := range o.linuxModes {
		printComparison(out, fmt.Sprintf("ether9 against Linux's own %s driver, %s", o.nic, linuxIOMMU[mode].words),
			[2]string{"ether9", "linux"}, rs[0], rs[i+1])
	}
	return err
}
