package simmachine

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/internal/pcaptest"
)

// TestCaptureStream: /net/ether0/capture, fetched over HTTP with the
// token, is a pcap stream that carries the frames the test's requests
// made, received (to port 80) and sent (from it); without the token it
// is refused. A reader that stops reading loses frames, counted in the
// NIC's stats and /metrics, while a bulk transfer goes on unhindered;
// capture off ends the streams. tshark reads the stream too.
func TestCaptureStream(t *testing.T) {
	h, _, base := serving(t)
	capURL := base + "/ns/net/ether0/capture"
	stats := func() string {
		s, err := h.System.Namespace().ReadFile("/net/ether0/stats")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	if code, body := send(t, "GET", capURL, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("capture without the token: %d %q, want 401", code, body)
	}
	if code, body := send(t, "GET", capURL, "Bearer "+testToken, ""); code != http.StatusConflict || !strings.Contains(body, "capture is off") {
		t.Fatalf("capture while off: %d %q, want 409 saying it is off", code, body)
	}
	// 16 slots of 64 KiB: a reader that stops is soon a ring behind.
	for _, cmd := range []string{"ether0 capture snaplen 65536", "ether0 capture on"} {
		if code := postCtl(t, base, cmd); code != http.StatusOK {
			t.Fatalf("ctl %q: %d", cmd, code)
		}
	}
	if code := postCtl(t, base, "ether0 capture snaplen 128"); code != http.StatusBadRequest {
		t.Fatalf("snaplen while on: %d, want 400", code)
	}

	resp, err := authGet(capURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("capture: %s %q", resp.Status, b)
	}
	var raw bytes.Buffer // what tshark reads afterwards
	frames := make(chan pcaptest.Frame, 4096)
	parsed := make(chan error, 1)
	go func() { parsed <- pcaptest.Read(io.TeeReader(resp.Body, &raw), frames) }()

	// Requests whose frames carry a marker both ways: the request line
	// arrives at port 80, the 404 naming the path leaves from it.
	const requests = 3
	for i := range requests {
		send(t, "GET", fmt.Sprintf("%s/ns/capture-marker-%d", base, i), "", "")
	}
	rx, tx := map[int]bool{}, map[int]bool{}
	deadline := time.After(20 * time.Second)
	for len(rx) < requests || len(tx) < requests {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("the stream ended early (%v); rx %v tx %v\nstats:\n%s", <-parsed, rx, tx, stats())
			}
			for i := range requests {
				m := []byte(fmt.Sprintf("capture-marker-%d", i))
				if f.DstPort == 80 && bytes.Contains(f.Payload, append([]byte("GET /ns/"), m...)) {
					rx[i] = true
				}
				if f.SrcPort == 80 && bytes.Contains(f.Payload, m) {
					tx[i] = true
				}
			}
		case <-deadline:
			t.Fatalf("the capture lacks marked frames: rx %v tx %v of %d\nstats:\n%s", rx, tx, requests, stats())
		}
	}

	// A second reader that never reads: its connection's window fills,
	// its stream stops, the ring laps it. The transfer must not notice.
	slow, err := authGet(capURL)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Body.Close()
	go func() {
		for range frames { // the first reader keeps reading
		}
	}()
	c := &http.Client{Timeout: 60 * time.Second}
	for range 4 {
		req, _ := http.NewRequest("GET", base+"/source?bytes=4194304", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		r, err := c.Do(req)
		if err != nil {
			t.Fatalf("a transfer beside a stalled capture reader: %v\nstats:\n%s", err, stats())
		}
		n, err := io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if err != nil || n != 4<<20 {
			t.Fatalf("a transfer beside a stalled capture reader: %d bytes, %v\nstats:\n%s", n, err, stats())
		}
	}
	st := stats()
	if counter(st, "capture_dropped: ") < 1 || counter(st, "capture_readers: ") != 2 {
		t.Fatalf("a reader a ring behind, and no drops counted:\n%s", st)
	}
	_, metrics := send(t, "GET", base+"/metrics", "", "")
	if !strings.Contains(metrics, `ether9_nic_capture_dropped{nic="ether0"} `) || strings.Contains(metrics, `ether9_nic_capture_dropped{nic="ether0"} 0`+"\n") {
		t.Fatalf("/metrics lacks the drops:\n%s", grepLines(metrics, "capture"))
	}

	// Off: the streams end once drained.
	if code := postCtl(t, base, "ether0 capture off"); code != http.StatusOK {
		t.Fatalf("capture off: %d", code)
	}
	select {
	case err := <-parsed:
		if err != nil {
			t.Fatalf("the stream does not parse: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the stream did not end at capture off\nstats:\n%s", stats())
	}

	// tshark reads the same bytes and finds the requests.
	ts := pcaptest.NewTsharkFile(t, raw.Bytes())
	if n := ts.Count(t, `http.request.uri contains "capture-marker"`); n != requests {
		t.Fatalf("tshark sees %d marked requests, want %d", n, requests)
	}
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
