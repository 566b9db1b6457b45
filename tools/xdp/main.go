package xdp

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"
)

// Main is the command line of the sample programs: test is rxdrop, txpush
// or l2fwd. It returns the exit status.
func Main(test string, args []string, out, errOut io.Writer) int {
	t, err := ParseTest(test)
	if err != nil {
		fmt.Fprintln(errOut, err)
		return 2
	}
	fs := flag.NewFlagSet(test, flag.ContinueOnError)
	fs.SetOutput(errOut)
	path := fs.String("path", "zero-copy", "netstack, copy or zero-copy")
	size := fs.Int("size", 64, "frame size in bytes with the FCS (64..1518)")
	dur := fs.Duration("time", 2*time.Second, "measured time")
	nicName := fs.String("nic", "igb", "NIC under test, by its driver: "+strings.Join(NICs(), " or "))
	verbose := fs.Bool("v", false, "log bring-up")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p, err := ParsePath(*path)
	if err != nil {
		fmt.Fprintln(errOut, err)
		return 2
	}
	c := Config{Test: t, Path: p, Size: *size - 4, Duration: *dur, NIC: *nicName}
	if *verbose {
		c.Logf = func(f string, a ...any) { fmt.Fprintf(errOut, f+"\n", a...) }
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(errOut, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(errOut, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	r, err := Run(c)
	if err != nil {
		fmt.Fprintf(errOut, "%s: %v\n", test, err)
		return 1
	}
	fmt.Fprintf(out, "%s %s %s %d B: %.1f Kpps (%d frames in %v)\n", *nicName, t, p, *size, r.Kpps(), r.Frames, r.Elapsed.Round(time.Millisecond))
	return 0
}
