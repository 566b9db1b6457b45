package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hugelgupf/p9/linux"

	"github.com/ether9/ether9/internal/pcaptest"
)

// TestControlNeedsTokenQEMU boots the image once, in QEMU, with 9P
// writable and the profiler served, and checks from the host through the
// forwards: without the token every control path (POST /ctl for the
// IOMMU, the link, copybreak and poweroff; 9P writes; /source, /sink,
// /debug/pprof; the packet capture over HTTP and 9P) is refused and the
// state the namespace shows is unchanged, the machine still up; a
// cross-origin POST with the token is refused; with the token each
// works, the capture read by tshark holds the requests the test made,
// and poweroff, last, stops the machine.
func TestControlNeedsTokenQEMU(t *testing.T) {
	needMachine(t, "e1000e")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	const token = "admin-test-token-0123456789"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log syncBuffer
	vm, ninePort, httpPort := bootNS(t, ctx, &log, "ether9.9p=rw", "ether9.token="+token, "ether9.selftest")
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	get(t, ctx, base+"/") // the guest's side of the forward answers
	anon := &http.Client{Timeout: time.Minute}
	authed := &http.Client{Timeout: time.Minute, Transport: bearer{token: token}}
	do := func(c *http.Client, method, path, body string, hdr ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\nconsole:\n%s", method, path, err, vm.Console.Tail(30))
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	short := func(s string) string { return s[:min(len(s), 200)] }
	// What the refusals must leave alone, read without the token: the
	// namespace is readable by anyone.
	state := func() string {
		t.Helper()
		var b strings.Builder
		for _, p := range []string{"/dev/iommu/ctl", "/net/ether0/ctl", "/net/ether0/link"} {
			code, body := do(anon, "GET", "/ns"+p, "")
			if code != http.StatusOK {
				t.Fatalf("GET /ns%s: %d %q", p, code, body)
			}
			fmt.Fprintf(&b, "%s:\n%s", p, body)
		}
		// The copybreak, from among the counters.
		_, stats := do(anon, "GET", "/ns/net/ether0/stats", "")
		for _, l := range strings.Split(stats, "\n") {
			if strings.HasPrefix(l, "copybreak: ") {
				fmt.Fprintf(&b, "%s\n", l)
			}
		}
		return b.String()
	}
	before := state()
	if !strings.Contains(before, "strict") || !strings.Contains(before, "tso: on") || !strings.Contains(before, "copybreak: ") || strings.Contains(before, "copybreak: 0\n") {
		t.Fatalf("unexpected starting state:\n%s", before)
	}

	bad := bearer{token: "not-the-token-0123456789"}
	wrong := &http.Client{Timeout: time.Minute, Transport: bad}
	refusals := 0
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/ctl", "iommu deferred 16"},
		{"POST", "/ctl", "ether0 tso off"},
		{"POST", "/ctl", "ether0 copybreak 0"},
		{"POST", "/ctl", "ether0 capture on"},
		{"POST", "/ctl", "machine poweroff"},
		{"GET", "/source?bytes=1048576", ""},
		{"POST", "/sink", "data"},
		{"GET", "/debug/pprof/", ""},
		{"GET", "/ns/net/ether0/capture", ""},
	} {
		for _, c := range []*http.Client{anon, wrong} {
			if code, body := do(c, r.method, r.path, r.body); code != http.StatusUnauthorized {
				t.Errorf("%s %s %q without the token: %d %q, want 401", r.method, r.path, r.body, code, short(body))
			}
			refusals++
		}
	}
	nine := dial9P(t, ctx, ninePort, "")
	for _, w := range []struct{ path, cmd string }{
		{"/dev/iommu/ctl", "deferred 16\n"},
		{"/net/ether0/ctl", "copybreak 0\n"},
		{"/net/ether0/ctl", "tso off\n"},
	} {
		if err := nine.Write(w.path, w.cmd); !errors.Is(err, linux.EROFS) {
			t.Errorf("9P write %s %q without the token: %v, want EROFS", w.path, w.cmd, err)
		}
	}
	if _, err := nine.Stream("/net/ether0/capture"); !errors.Is(err, linux.EACCES) {
		t.Errorf("9P capture without the token: %v, want EACCES", err)
	}
	// A page on another site, in a browser that holds the token.
	if code, body := do(authed, "POST", "/ctl", "iommu deferred 16", "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Errorf("cross-origin POST with the token: %d %q, want 403", code, body)
	}
	if after := state(); after != before {
		t.Fatalf("refused requests changed the state:\n%s\nwas:\n%s", after, before)
	}
	_, refused := do(anon, "GET", "/ns/dev/admin/refused", "")
	for _, want := range []string{fmt.Sprintf("no_token %d\n", refusals/2+4), fmt.Sprintf("bad_token %d\n", refusals/2), "cross_origin 1\n"} {
		if !strings.Contains(refused, want) {
			t.Errorf("/dev/admin/refused lacks %q:\n%s", want, refused)
		}
	}

	// With the token each works.
	for _, cmd := range []string{"ether0 capture on", "iommu deferred 16", "ether0 tso off", "ether0 copybreak 0"} {
		if code, body := do(authed, "POST", "/ctl", cmd); code != http.StatusOK {
			t.Fatalf("ctl %q with the token: %d %q", cmd, code, body)
		}
	}
	after := state()
	for _, want := range []string{"deferred 16", "tso: off", "capture on", "copybreak: 0\n"} {
		if !strings.Contains(after, want) {
			t.Errorf("state after the commands lacks %q:\n%s", want, after)
		}
	}
	capture, err := authed.Do(mustRequest(t, ctx, base+"/ns/net/ether0/capture"))
	if err != nil || capture.StatusCode != http.StatusOK {
		t.Fatalf("capture with the token: %v %v", err, capture)
	}
	defer capture.Body.Close()
	var raw bytes.Buffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&raw, capture.Body); copied <- err }()
	const marked = 3
	for i := range marked {
		do(anon, "GET", fmt.Sprintf("/ns/capture-marker-%d", i), "")
	}
	if code, body := do(authed, "GET", "/source?bytes=65536", ""); code != http.StatusOK || len(body) != 65536 {
		t.Errorf("/source with the token: %d, %d bytes", code, len(body))
	}
	if code, body := do(authed, "POST", "/sink", "data"); code != http.StatusOK || !strings.Contains(body, "3a6eb0790f39ac87c94f3856b2dd2c5d110e6811602261a9a923d3bb23adc8b7") {
		t.Errorf("/sink with the token: %d %q", code, body)
	}
	if code, body := do(authed, "GET", "/debug/pprof/", ""); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ with the token: %d", code)
	}
	nineTok := dial9P(t, ctx, ninePort, token)
	if err := nineTok.Write("/dev/iommu/ctl", "strict\n"); err != nil {
		t.Errorf("9P write with the token: %v", err)
	}
	if got, err := nineTok.Read("/dev/iommu/ctl"); err != nil || got != "strict\n" {
		t.Errorf("/dev/iommu/ctl after the 9P write: %q, %v", got, err)
	}
	st, err := nineTok.Stream("/net/ether0/capture")
	if err != nil {
		t.Fatalf("9P capture with the token: %v", err)
	}
	hdr := make([]byte, 24)
	if _, err := io.ReadFull(st, hdr); err != nil || binary.LittleEndian.Uint32(hdr) != 0xa1b23c4d {
		t.Errorf("9P capture header % x, %v", hdr, err)
	}
	st.Close()
	if code, body := do(authed, "POST", "/ctl", "ether0 capture off"); code != http.StatusOK {
		t.Fatalf("capture off: %d %q", code, body)
	}
	select {
	case err := <-copied:
		if err != nil {
			t.Fatalf("the capture stream: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("the capture did not end at capture off; %d bytes", raw.Len())
	}
	ts := pcaptest.NewTsharkFile(t, raw.Bytes())
	if n := ts.Count(t, `http.request.uri contains "capture-marker"`); n != marked {
		t.Errorf("tshark finds %d marked requests in %d bytes of capture, want %d", n, raw.Len(), marked)
	}
	if n := ts.Count(t, "tcp.srcport == 80"); n < marked {
		t.Errorf("tshark finds %d frames from port 80, want at least %d answers", n, marked)
	}

	// Last: poweroff with the token stops the machine.
	if code, body := do(authed, "POST", "/ctl", "machine poweroff"); code != http.StatusOK {
		t.Fatalf("poweroff with the token: %d %q", code, body)
	}
	select {
	case <-vm.Done():
	case <-time.After(time.Minute):
		t.Fatalf("the machine is still up a minute after poweroff\nconsole:\n%s", vm.Console.Tail(20))
	}
}

func mustRequest(t *testing.T, ctx context.Context, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
