package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
