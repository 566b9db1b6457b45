// Command bench measures ether9's packet paths on the simulated machine and
// prints the tables the seed threads published, so a patch's effect can be
// compared in one build and one run.
//
//	go run ./tools/bench copybreak [-quick] [-invcost 1us]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one benchmark: it parses its own flags and prints its table.
type command struct {
	summary string
	run     func(args []string, out io.Writer) error
}

var commands = map[string]command{
	"copybreak":      {"ns per RX buffer by copybreak mode, IOMMU mode, copybreak and frame size (e1000e seed)", runCopybreak},
	"copybreak-auto": {"the driver's measured copybreak against fixed ones, by VT-d invalidation cost and frame size", runCopybreakAuto},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bench <command> [flags]")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "bench <command> -h lists the command's flags")
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "bench: unknown command %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	if err := c.run(os.Args[2:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "bench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
