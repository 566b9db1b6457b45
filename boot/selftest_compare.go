package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// compareIRQ runs the self-test rounds times on the same NIC, each round
// once with the drivers on their interrupt and once polling, in turns
// (ether9.irq=off), prints every report and a table of the two side by
// side with each round's ratio: on a shared host only figures from one
// round compare, and the rounds show how far they spread.
func compareIRQ(ctx context.Context, o options, out io.Writer) error {
	rs, err := runRounds(ctx, o, out, []variant{
		{"-irq on", func(o *options) { o.irq = "on" }},
		{"-irq off", func(o *options) { o.irq = "off" }},
	})
	printComparison(out, "interrupt against polling", [2]string{"irq", "polling"}, rs[0], rs[1])
	return err
}

// variant is one way a round boots: its name for the round's header and
// what it changes in the options.
type variant struct {
	name string
	set  func(o *options)
}

// runRounds runs the self-test o.rounds times, each round once per
// variant, the order reversing every other round so that what changes
// with time on the host (its other load, a warming cache) falls on all
// of them. It prints every report and returns each variant's reports by
// round, nil for a boot that failed, and the failures.
func runRounds(ctx context.Context, o options, out io.Writer, variants []variant) ([][]*report, error) {
	rs := make([][]*report, len(variants))
	var errs []error
	for round := 1; round <= o.rounds; round++ {
		order := make([]int, len(variants))
		for i := range order {
			order[i] = i
		}
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, i := range order {
			v := variants[i]
			vo := o
			v.set(&vo)
			fmt.Fprintf(out, "selftest: round %d of %d: %s\n", round, o.rounds, v.name)
			r, err := selftest(ctx, vo, out)
			if r != nil {
				r.print(out)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("round %d %s: %w", round, v.name, err))
				r = nil
			}
			rs[i] = append(rs[i], r)
		}
	}
	return rs, errors.Join(errs...)
}

// comparisonRows are the figures compared, read off each report.
var comparisonRows = []struct {
	name   string
	value  func(r *report) float64
	format string
}{
	{"pull Mbit/s (GET /source)", func(r *report) float64 { return r.pull.mbitps() }, "%.1f"},
	{"push Mbit/s (POST /sink)", func(r *report) float64 { return r.push.mbitps() }, "%.1f"},
	{"pull qemu cpu ms per MB", func(r *report) float64 { return r.pull.cpuPerMB() }, "%.1f"},
	{"push qemu cpu ms per MB", func(r *report) float64 { return r.push.cpuPerMB() }, "%.1f"},
	{"idle qemu cpu, host cores", func(r *report) float64 { return r.feel.idleCores() }, "%.3f"},
	{"ping median ms", func(r *report) float64 { return ms(r.feel.ping.median) }, "%.3f"},
	{"ping p99 ms", func(r *report) float64 { return ms(r.feel.ping.p99) }, "%.3f"},
	{"0-byte GETs req/s", func(r *report) float64 { return r.feel.reqPerSec() }, "%.0f"},
	{"GETs qemu cpu ms per request", func(r *report) float64 { return r.feel.reqCPUms() }, "%.2f"},
	{"qemu start to http ms", func(r *report) float64 { return ms(r.http) }, "%.0f"},
}

// printComparison prints one row per measure: the rounds' figures each
// way, each round's ratio and their median. A round whose boot failed
// has no figures.
// what says what is compared, cols names the two columns.
func printComparison(out io.Writer, what string, cols [2]string, irq, poll []*report) {
	nic := ""
	for _, r := range append(slices.Clone(irq), poll...) {
		if r != nil {
			nic = r.nic
		}
	}
	fmt.Fprintf(out, "selftest: nic %s, %s, %d rounds:\n", nic, what, len(irq))
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "measure\t%s\t%s\t%[1]s/%[2]s\tmedian\t\n", cols[0], cols[1])
	for _, row := range comparisonRows {
		var a, b, ratios []string
		var rs []float64
		for i := range irq {
			if irq[i] == nil || poll[i] == nil {
				continue
			}
			x, y := row.value(irq[i]), row.value(poll[i])
			a, b = append(a, fmt.Sprintf(row.format, x)), append(b, fmt.Sprintf(row.format, y))
			if y != 0 {
				rs = append(rs, x/y)
				ratios = append(ratios, fmt.Sprintf("%.2f", x/y))
			} else {
				ratios = append(ratios, "-")
			}
		}
		med := "-"
		if len(rs) > 0 {
			slices.Sort(rs)
			med = fmt.Sprintf("%.2f", rs[len(rs)/2])
			if len(rs)%2 == 0 {
				med = fmt.Sprintf("%.2f", (rs[len(rs)/2-1]+rs[len(rs)/2])/2)
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t\n", row.name, strings.Join(a, " "), strings.Join(b, " "), strings.Join(ratios, " "), med)
	}
	w.Flush()
}
