package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/internal/stall"
)

// stallLimit is how long a transfer may move no byte before the self-test
// gives it up. A 16 MiB transfer in QEMU TCG moves its first megabyte
// within a second even on a loaded host; 20 s of nothing is a stall, and
// waiting for the client's 2-minute limit only hides what stopped.
const stallLimit = 20 * time.Second

// progress counts the bytes that pass through a transfer's reader: the
// request body the transport sends, or the response body we read.
type progress struct {
	r io.Reader
	n atomic.Int64
}

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n.Add(int64(n))
	return n, err
}

// errStalled is the cause a stalled transfer's context is cancelled with.
type errStalled struct {
	moved int64
	limit time.Duration
}

func (e errStalled) Error() string {
	return fmt.Sprintf("stalled: no byte moved for %v after %d bytes", e.limit, e.moved)
}

// watchStall returns a context cancelled, with errStalled as its cause,
// once p has moved no byte for limit; stop ends the watch.
func watchStall(ctx context.Context, p *progress, limit time.Duration) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := stall.Watch(limit, p.n.Load, func() { cancel(errStalled{moved: p.n.Load(), limit: limit}) })
	return ctx, func() { w.Stop(); cancel(nil) }
}

// stallCause names a stall as the reason of err, when the watch fired.
func stallCause(ctx context.Context, err error) error {
	if s, ok := context.Cause(ctx).(errStalled); ok {
		return fmt.Errorf("%w (%v)", err, s)
	}
	return err
}

// stallWatch is how long a stalled transfer's report watches the guest's
// counters after the first snapshot: what moves then is what still works
// (a poll loop spinning, frames dropped for want of descriptors, the
// peer's retransmissions arriving or not).
const stallWatch = 3 * time.Second

// ringGauges are the counter suffixes that are a ring's state, not a
// count: the report gives their values, not how they moved.
var ringGauges = []string{"_rx_armed", "_rx_clean", "_rx_tail"}

func isRingGauge(name string) bool {
	return slices.ContainsFunc(ringGauges, func(g string) bool { return strings.HasSuffix(name, g) })
}

// diagnose is what a failed transfer's report adds, read over new
// connections so that it says what stopped (a ring without buffers,
// drops, retransmissions, sleeps that never ended), or that the guest no
// longer answers: how the guest's counters moved since before the
// transfer, how they moved over the stallWatch after that, its rings'
// state, and on the simulated machine the NIC model's rings and the
// peer's TCP.
func (r *report) diagnose(ctx context.Context, base, before string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second+stallWatch)
	defer cancel()
	client := &http.Client{Transport: bearer{token: r.token, next: &http.Transport{DisableKeepAlives: true}}}
	var b strings.Builder
	page, err := getStatus(ctx, client, base)
	if err != nil {
		fmt.Fprintf(&b, "the guest's counters: %v\n", err)
	} else {
		b.WriteString("the guest's counters since before the transfer:\n")
		writeMoved(&b, before, page)
		select {
		case <-ctx.Done():
		case <-time.After(stallWatch):
		}
		if later, err := getStatus(ctx, client, base); err != nil {
			fmt.Fprintf(&b, "the guest's counters %v later: %v\n", stallWatch, err)
		} else {
			fmt.Fprintf(&b, "and over the %v after that (two status pages among them):\n", stallWatch)
			writeMoved(&b, page, later)
			b.WriteString("the guest's rings:\n")
			for _, l := range strings.Split(later, "\n") {
				if f := strings.Fields(l); len(f) >= 2 && isRingGauge(strings.Join(f[:len(f)-1], " ")) {
					fmt.Fprintf(&b, "\t%s\n", strings.Join(f, " "))
				}
			}
		}
	}
	if r.outside != nil {
		if s, err := r.outside(ctx); err != nil {
			fmt.Fprintf(&b, "outside the guest: %v\n", err)
		} else {
			b.WriteString("outside the guest:\n" + s)
		}
	}
	return b.String()
}

// writeMoved lists the counters that grew from page a to page b.
func writeMoved(b *strings.Builder, a, page string) {
	for _, d := range movedCounters(a, page) {
		if !isRingGauge(d.name) {
			fmt.Fprintf(b, "\t%s +%d\n", d.name, d.by)
		}
	}
}
