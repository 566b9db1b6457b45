package linux

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of /proc/stat's CPU times (USER_HZ): 100 on x86.
const userHZ = 100

// KernelStats renders Linux's own counters the way the metal platform
// renders the shim's, one "name value" line each: interrupts and context
// switches since boot and the CPUs' idle time (idle and iowait), from
// /proc/stat, and page faults from /proc/vmstat.
func KernelStats() (string, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return "", fmt.Errorf("kernel stats: %w", err)
	}
	vm, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return "", fmt.Errorf("kernel stats: %w", err)
	}
	return kernelStats(stat, vm)
}

// kernelStats renders /proc/stat's and /proc/vmstat's contents.
func kernelStats(stat, vmstat []byte) (string, error) {
	var interrupts, switches, idle, faults uint64
	var seen int
	field := func(line string, i int) (uint64, error) {
		f := strings.Fields(line)
		if i >= len(f) {
			return 0, fmt.Errorf("kernel stats: %q has no field %d", line, i)
		}
		return strconv.ParseUint(f[i], 10, 64)
	}
	sc := bufio.NewScanner(bytes.NewReader(stat))
	sc.Buffer(nil, 1<<20) // "intr" lists every interrupt line
	for sc.Scan() {
		l := sc.Text()
		var err error
		switch {
		case strings.HasPrefix(l, "cpu "):
			// user nice system idle iowait ...
			var io uint64
			if idle, err = field(l, 4); err == nil {
				io, err = field(l, 5)
				idle += io
			}
		case strings.HasPrefix(l, "intr "):
			interrupts, err = field(l, 1)
		case strings.HasPrefix(l, "ctxt "):
			switches, err = field(l, 1)
		default:
			continue
		}
		if err != nil {
			return "", fmt.Errorf("kernel stats: /proc/stat: %w", err)
		}
		seen++
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("kernel stats: /proc/stat: %w", err)
	}
	for l := range strings.SplitSeq(string(vmstat), "\n") {
		if v, ok := strings.CutPrefix(l, "pgfault "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return "", fmt.Errorf("kernel stats: /proc/vmstat: %w", err)
			}
			faults = n
			seen++
		}
	}
	if seen != 4 {
		return "", fmt.Errorf("kernel stats: %d of the 4 counters found in /proc/stat and /proc/vmstat", seen)
	}
	return fmt.Sprintf("interrupts %d\nswitches %d\npage_faults %d\nidle_ns %d\n",
		interrupts, switches, faults, idle*(1e9/userHZ)), nil
}
