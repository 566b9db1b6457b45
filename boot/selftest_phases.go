package main

import (
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/ether9/ether9/boot/qemu"
)

// bootPhases are the console lines that end each stage of a boot, in
// order; a platform prints only some of them (the Linux kernel is quiet,
// the shim's lines are the metal platform's). Each phase is the time
// from the previous line seen to its own. The lines are not anchored: a
// firmware's last words may lack their newline ("Booting from
// ROM..ether9: booting").
var bootPhases = []struct {
	name string // what the time up to the line went to
	re   *regexp.Regexp
	// parallel stages run side by side after the last one that is not:
	// each counts from it, in whichever order their lines come.
	parallel bool
}{
	{"QEMU and firmware (qboot, or OVMF and GRUB)", regexp.MustCompile(`metal: shim started`), false},
	{"shim: paging, ACPI, clocks, loading /init", regexp.MustCompile(`metal: /init .*; starting`), false},
	{"Go runtime and package inits to main", regexp.MustCompile(`ether9: booting`), false},
	{"PCI and VT-d: translation on", regexp.MustCompile(`iommu: translation on`), false},
	{"NIC link up, from VT-d on", regexp.MustCompile(`ether0: link up`), true},
	{"NICs reset, the stack up", regexp.MustCompile(`ether9: up in`), false},
	{"DHCP lease, from the stack up", regexp.MustCompile(`ether0: dhcp \d`), true},
	{"HTTP listening, from the stack up", lineHTTP.re, true},
}

// phase is one boot stage as a console showed it.
type phase struct {
	name      string
	at, since time.Duration // from the origin, and from the stage before
	cpu       time.Duration // QEMU's CPU time over the stage; 0: not measured
}

// phasesOf finds bootPhases' lines on a console, each after the one
// before it.
func phasesOf(lines []qemu.Line) []phase {
	var out []phase
	var last, lastCPU time.Duration
	cpuKnown := true // QEMU's CPU time is 0 at the origin
	i := 0
	for _, p := range bootPhases {
		for j := i; j < len(lines); j++ {
			if l := lines[j]; p.re.MatchString(l.Text) {
				ph := phase{name: p.name, at: l.At, since: l.At - last}
				if l.CPU > 0 && cpuKnown {
					ph.cpu = l.CPU - lastCPU
				}
				out = append(out, ph)
				if !p.parallel {
					last, lastCPU, cpuKnown, i = l.At, l.CPU, l.CPU > 0, j+1
				}
				break
			}
		}
	}
	return out
}

// printPhases prints the boot's stages as a table.
func printPhases(w io.Writer, origin string, ps []phase) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "selftest: boot phases (from %s)%*s at     took  qemu cpu\n", origin, 44-26-len(origin), "")
	for _, p := range ps {
		cpu := "-"
		if p.cpu > 0 {
			cpu = fmt.Sprintf("%.3fs", p.cpu.Seconds())
		}
		fmt.Fprintf(w, "selftest:   %-42s %6.3fs %6.3fs %7s\n", p.name, p.at.Seconds(), p.since.Seconds(), cpu)
	}
}
