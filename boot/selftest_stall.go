package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
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

// diagnose is what a failed transfer's report adds: how the guest's
// counters moved since before the transfer, read over a new connection, so
// that the report says what stopped (a ring without buffers, drops,
// retransmissions, sleeps that never ended); or that the guest no longer
// answers.
func diagnose(ctx context.Context, token, base, before string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client := &http.Client{Transport: bearer{token: token, next: &http.Transport{DisableKeepAlives: true}}}
	page, err := getStatus(ctx, client, base)
	if err != nil {
		return fmt.Sprintf("the guest's counters: %v", err)
	}
	var b strings.Builder
	b.WriteString("the guest's counters since before the transfer:\n")
	for _, d := range movedCounters(before, page) {
		fmt.Fprintf(&b, "\t%s +%d\n", d.name, d.by)
	}
	return b.String()
}
