package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/ether9/ether9/tools/xdp"
)

func init() {
	commands["xdp"] = command{"Kpps for rxdrop, txpush, l2fwd by path: netstack, copy, zero-copy queue (igb AF_XDP seed)", runXDP}
}

// runXDP prints the seed's table: Kpps at 64 and 1500 bytes for the three
// sample programs over the netstack path and over a queue taken in copy
// and in zero-copy mode, then the zero-copy gain on rxdrop at 64 bytes.
func runXDP(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("xdp", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "short runs")
	dur := fs.Duration("time", 2*time.Second, "measured time per cell")
	inQEMU := fs.Bool("qemu", false, "run the programs inside QEMU instead, two igb NICs on a hub (go run ./boot -xdp)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *inQEMU {
		return runXDPQEMU(out)
	}
	if *quick {
		*dur = 300 * time.Millisecond
	}
	paths := []xdp.Path{xdp.Netstack, xdp.Copy, xdp.ZeroCopy}
	tests := []xdp.Test{xdp.RxDrop, xdp.TxPush, xdp.L2Fwd}
	fmt.Fprintf(out, "zero-copy queues on the simulated machine (82576 model behind VT-d), Kpps, %v per cell\n", *dur)
	var base, zc float64
	for _, size := range []int{64, 1500} {
		fmt.Fprintf(out, "\n%d B      %10s %10s %10s\n", size, "netstack", "copy", "zero-copy")
		for _, t := range tests {
			fmt.Fprintf(out, "%-8s", t)
			for _, p := range paths {
				r, err := xdp.Run(xdp.Config{Test: t, Path: p, Size: size - 4, Duration: *dur})
				if err != nil {
					return fmt.Errorf("%v %v %d B: %w", t, p, size, err)
				}
				fmt.Fprintf(out, " %10.1f", r.Kpps())
				if size == 64 && t == xdp.RxDrop {
					switch p {
					case xdp.Netstack:
						base = r.Kpps()
					case xdp.ZeroCopy:
						zc = r.Kpps()
					}
				}
			}
			fmt.Fprintln(out)
		}
	}
	if base <= 0 {
		return fmt.Errorf("netstack rxdrop at 64 B measured nothing")
	}
	fmt.Fprintf(out, "\nratio: %.2f\n", zc/base)
	return nil
}

// runXDPQEMU runs the boot command's -xdp mode, which builds the image,
// boots it and prints the guest's table.
func runXDPQEMU(out io.Writer) error {
	cmd := exec.Command("go", "run", "./boot", "-xdp")
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go run ./boot -xdp: %w", err)
	}
	return nil
}
