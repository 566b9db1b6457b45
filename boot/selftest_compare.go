package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
)

// compareIRQ runs the self-test twice on the same NIC, the drivers taking
// their interrupt and then polling (ether9.irq=off), and prints both
// reports and a table of the two side by side with their ratio: on a
// shared host only figures from one run compare.
func compareIRQ(ctx context.Context, o options, out io.Writer) error {
	var rs [2]*report
	var errs []error
	for i, mode := range []string{"on", "off"} {
		o.irq = mode
		fmt.Fprintf(out, "selftest: boot %d of 2: -irq %s\n", i+1, mode)
		r, err := selftest(ctx, o, out)
		if r != nil {
			r.print(out)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("-irq %s: %w", mode, err))
		}
		rs[i] = r
	}
	if rs[0] != nil && rs[1] != nil {
		printComparison(out, rs[0], rs[1])
	}
	return errors.Join(errs...)
}

// comparisonRows are the figures compared, read off each report.
var comparisonRows = []struct {
	name   string
	value  func(r *report) float64
	format string
}{
	{"pull Mbit/s (GET /source)", func(r *report) float64 { return r.pull.mbitps() }, "%.1f"},
	{"push Mbit/s (POST /sink)", func(r *report) float64 { return r.push.mbitps() }, "%.1f"},
	{"idle qemu cpu, host cores", func(r *report) float64 { return r.feel.idleCores() }, "%.3f"},
	{"ping median ms", func(r *report) float64 { return ms(r.feel.ping.median) }, "%.3f"},
	{"ping p99 ms", func(r *report) float64 { return ms(r.feel.ping.p99) }, "%.3f"},
	{"0-byte GETs req/s", func(r *report) float64 { return r.feel.reqPerSec() }, "%.0f"},
	{"qemu start to http ms", func(r *report) float64 { return ms(r.http) }, "%.0f"},
}

func printComparison(out io.Writer, irq, poll *report) {
	fmt.Fprintf(out, "selftest: nic %s, interrupt against polling, one run:\n", irq.nic)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "measure\tirq\tpolling\tirq/polling\t")
	for _, row := range comparisonRows {
		a, b := row.value(irq), row.value(poll)
		ratio := "-"
		if b != 0 {
			ratio = fmt.Sprintf("%.2f", a/b)
		}
		fmt.Fprintf(w, "%s\t"+row.format+"\t"+row.format+"\t%s\t\n", row.name, a, b, ratio)
	}
	w.Flush()
}
