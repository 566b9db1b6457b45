package main

import (
	"io"
	"strings"
	"testing"

	"github.com/ether9/ether9"
	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/internal/simtest"
)

// The program answers GET / and counts it, on the simulated igc.
func TestHello(t *testing.T) {
	h, con := simtest.Run(t, ether9.Config{Name: "hello"}, serve, "igc")
	con.WaitFor(t, "hello: listening")
	guest, _ := simmachine.Addrs(0)
	for _, g := range guest {
		url := "http://" + g.Addr().String() + "/"
		if g.Addr().Is6() {
			url = "http://[" + g.Addr().String() + "]/"
		}
		resp, err := simtest.HTTPClient(h.Peer.Stack).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), "hello from ether9") {
			t.Fatalf("GET %s: %d %q %v", url, resp.StatusCode, b, err)
		}
	}
	if n, err := h.System.Namespace().ReadFile("/hello/requests"); err != nil || n != "2\n" {
		t.Errorf("/hello/requests = %q, %v", n, err)
	}
	resp, err := simtest.HTTPClient(h.Peer.Stack).Get("http://10.0.2.15/status/ns/hello/requests")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "2\n" {
		t.Errorf("the namespace over HTTP: %q", b)
	}
}
