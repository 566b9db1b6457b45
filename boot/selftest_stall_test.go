package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A server that stops reading a request body midway must end the transfer
// after the stall limit, with errStalled as the cause, not after the
// client's own timeout; one that keeps reading must not be cut off.
func TestWatchStall(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall" {
			io.CopyN(io.Discard, r.Body, 1<<20)
			<-stop
			return
		}
		io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	defer close(stop) // before Close, which waits for the handler
	send := func(path string, limit time.Duration) error {
		p := &progress{r: bytes.NewReader(make([]byte, 64<<20))}
		ctx, done := watchStall(context.Background(), p, limit)
		defer done()
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+path, p)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return stallCause(ctx, err)
	}
	// The client gives up after 10 s with an error of its own; only the
	// watch names a stall.
	if err := send("/stall", 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "stalled: no byte moved") {
		t.Fatalf("stalled transfer: err %v, want a stall", err)
	}
	if err := send("/", 2*time.Second); err != nil {
		t.Errorf("a moving transfer: %v", err)
	}
}

// A stall's report says what moved since before the transfer and what
// still moved a few seconds later, gives the rings' gauges as values, and
// adds what the machine reports from outside the guest.
func TestDiagnoseStall(t *testing.T) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := pages.Add(1)
		// The first page shows the stall's drops; the second, a poll
		// loop still spinning with nothing to show for it.
		fmt.Fprintf(w, "ether0 rx_no_buffers %d\nether0 netstack.spins %d\nether0 q0_rx_armed 255\nether0 q0_rx_clean %d\n", 800, 100*n, 3*n)
	}))
	defer srv.Close()
	before := "ether0 rx_no_buffers 0\nether0 netstack.spins 0\nether0 q0_rx_armed 255\nether0 q0_rx_clean 0\n"
	r := &report{outside: func(context.Context) (string, error) { return "\tpeer 0 tcp retransmits 9\n", nil }}
	got := r.diagnose(context.Background(), srv.URL, before)
	want := []string{
		"since before the transfer:\n\tether0 netstack.spins +100\n\tether0 rx_no_buffers +800\n",
		"after that (two status pages among them):\n\tether0 netstack.spins +100\nthe guest's rings:\n",
		"\tether0 q0_rx_armed 255\n\tether0 q0_rx_clean 6\n",
		"outside the guest:\n\tpeer 0 tcp retransmits 9\n",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("report lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "q0_rx_clean +") {
		t.Errorf("a ring gauge reported as a count:\n%s", got)
	}
}
