package main

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// The copybreak-auto benchmark checks the driver's own choice: for
// several VT-d invalidation costs, ns per RX buffer in strict mode with
// sync-no-unmap at fixed copybreaks and with "copybreak auto" (the
// threshold the driver measured on its own domain at that cost), per
// frame size, and auto's cost against the best fixed one.

// cbAuto in a cell's cb asks for "copybreak auto".
const cbAuto = -1

var (
	autoInvCosts = []time.Duration{200 * time.Nanosecond, time.Microsecond, 5 * time.Microsecond}
	autoFixed    = []int{0, 256, 512, 1024, 2048}
	autoSizes    = []int{60, 590, 1514}
)

func runCopybreakAuto(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("copybreak-auto", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a short run: 8,192 frames per cell instead of 65,536")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	p := cbParams{frames: 65536, batch: 128, deferBatch: 64}
	if *quick {
		p.frames = 8192
	}
	fmt.Fprintf(out, "copybreak auto: ns per RX buffer, e1000e + netstack endpoint, 82574L model, strict VT-d, sync-no-unmap\n")
	fmt.Fprintf(out, "%d frames per cell in polls of %d, the median poll; auto is measured by the driver at probe\n\n", p.frames, p.batch)
	fmt.Fprintf(out, "%-8s %5s", "invcost", "size")
	for _, cb := range autoFixed {
		fmt.Fprintf(out, " %7s", fmt.Sprintf("cb%d", cb))
	}
	fmt.Fprintf(out, " %9s %7s %9s\n", "auto", "auto cb", "auto/best")
	warm := p
	warm.frames = min(p.frames, 8192)
	if _, err := measureCell(cbCell{"sync", "strict", 256, 1514}, warm); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, inv := range autoInvCosts {
		p.invCost = inv
		for _, size := range autoSizes {
			fmt.Fprintf(out, "%-8v %5d", inv, size)
			best := 0.0
			for _, cb := range autoFixed {
				r, err := measureCell(cbCell{"sync", "strict", cb, size}, p)
				if err != nil {
					return fmt.Errorf("invcost %v size %d cb %d: %w", inv, size, cb, err)
				}
				if best == 0 || r.ns < best {
					best = r.ns
				}
				fmt.Fprintf(out, " %7.0f", r.ns)
			}
			r, err := measureCell(cbCell{"sync", "strict", cbAuto, size}, p)
			if err != nil {
				return fmt.Errorf("invcost %v size %d auto: %w", inv, size, err)
			}
			fmt.Fprintf(out, " %9.0f %7d %9.2f\n", r.ns, r.chosen, r.ns/best)
		}
	}
	return nil
}
