package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// sysfs is where the page reads the NIC's state; a test points it at a
// directory of its own.
type sysfs struct {
	root string // "/": /sys and /proc under it
	nic  string // eth0
}

func (s sysfs) path(p ...string) string { return filepath.Join(append([]string{s.root}, p...)...) }

// iommuMode is how Linux translates the NIC's DMA: the type of its IOMMU
// group ("DMA" strict, "DMA-FQ" lazy with a flush queue, "identity"), or
// "off" when the NIC is in no group (intel_iommu=off). The self-test
// checks it against the mode it booted, so a comparison cannot quietly
// run in another.
func (s sysfs) iommuMode() string {
	b, err := os.ReadFile(s.path("sys/class/net", s.nic, "device/iommu_group/type"))
	if err != nil {
		return "off"
	}
	return strings.TrimSpace(string(b))
}

// driver is the kernel driver bound to the NIC.
func (s sysfs) driver() string {
	l, err := os.Readlink(s.path("sys/class/net", s.nic, "device/driver"))
	if err != nil {
		return "none"
	}
	return filepath.Base(l)
}

// writePage writes the status page: one fact per line, counters as
// "NAME VALUE" lines the self-test diffs across each measurement (the
// interface's statistics and its interrupt lines, summed over the CPUs).
func (s sysfs) writePage(w io.Writer) {
	fmt.Fprintf(w, "linux reference: driver %s on %s\n", s.driver(), s.nic)
	fmt.Fprintf(w, "iommu %s\n", s.iommuMode())
	if b, err := os.ReadFile(s.path("proc/uptime")); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			fmt.Fprintf(w, "uptime %ss\n", f[0])
		}
	}
	dir := s.path("sys/class/net", s.nic, "statistics")
	names, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintf(w, "%s statistics: %v\n", s.nic, err)
	}
	for _, e := range names {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 {
			fmt.Fprintf(w, "%s %s %d\n", s.nic, e.Name(), v)
		}
	}
	if b, err := os.ReadFile(s.path("proc/interrupts")); err == nil {
		irqs := parseInterrupts(string(b), s.nic)
		keys := make([]string, 0, len(irqs))
		for k := range irqs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s irq %s %d\n", s.nic, k, irqs[k])
		}
	}
}

// parseInterrupts reads /proc/interrupts and returns, for each line whose
// handler name starts with nic (eth0, eth0-rx-0, eth0-TxRx-0), its count
// summed over the CPUs. The header line names the CPUs; a line has one
// count per CPU after "N:", then the controller, the type and the names.
func parseInterrupts(text, nic string) map[string]uint64 {
	out := make(map[string]uint64)
	lines := strings.Split(text, "\n")
	if len(lines) == 0 {
		return out
	}
	cpus := len(strings.Fields(lines[0]))
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		var sum uint64
		n := 0
		for _, c := range f[1:min(len(f), 1+cpus)] {
			v, err := strconv.ParseUint(c, 10, 64)
			if err != nil {
				break
			}
			sum += v
			n++
		}
		if n == 0 {
			continue
		}
		// The names are the last field; a line of a shared interrupt
		// lists several, comma-separated.
		for _, name := range strings.Split(f[len(f)-1], ",") {
			if name == nic || strings.HasPrefix(name, nic+"-") {
				out[name] += sum
			}
		}
	}
	return out
}
