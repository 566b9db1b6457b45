package simmachine

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/ether9/ether9/ns/ninep"
)

// flood is how many slow clients the test opens: far more than the
// status server takes at once.
const flood = 200

// TestHTTPFloodOfSlowClients: a flood of clients that open a connection,
// send half a request and stall holds at most the server's bound of
// connections; meanwhile 9P and the console shell answer at once, and
// the status page answers again once the header timeout has handed the
// stalled slots on.
func TestHTTPFloodOfSlowClients(t *testing.T) {
	con := &console{}
	h, err := Start(context.Background(), testConfig(con))
	if err != nil {
		t.Fatalf("start: %v\nconsole:\n%s", err, con.text())
	}
	defer h.Close()
	con.waitFor(t, "http: listening :80")
	con.waitFor(t, "9p: listening :564")
	stats := func() map[string]int {
		t.Helper()
		s, err := h.System.Namespace().ReadFile("/net/http/stats")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			var k string
			var v int
			fmt.Sscanf(l, "%s %d", &k, &v)
			m[k] = v
		}
		return m
	}
	limit := stats()["conns_max"]
	if limit == 0 || limit >= flood {
		t.Fatalf("conns_max %d: the test floods with %d", limit, flood)
	}

	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("tcp", h.Forward.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		c.Write([]byte("GET / HTTP/1.1\r\nHost: ether9\r\n")) // and never the blank line
	}
	// The server fills its slots, and no more.
	deadline := time.Now().Add(20 * time.Second)
	for stats()["conns"] < limit && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := stats(); st["conns"] != limit || st["conns_peak"] > limit {
		t.Fatalf("under a flood of %d: %v, want conns = conns_max and no higher peak", flood, st)
	}

	// 9P from the peer answers while HTTP is full.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := gonet.DialContextTCP(ctx, h.Peer.Stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(GuestAddr.Addr().As4()), Port: ninep.Port}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatalf("9p dial under the flood: %v", err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cl, err := ninep.Dial(c)
	if err != nil {
		t.Fatalf("9p attach under the flood: %v", err)
	}
	defer cl.Close()
	if s, err := cl.Read("/net/http/stats"); err != nil || !strings.Contains(s, fmt.Sprintf("conns %d\n", limit)) {
		t.Fatalf("9p read under the flood: %q, %v", s, err)
	}
	// So does the console shell.
	var out bytes.Buffer
	if err := h.System.Shell().Exec(ctx, "cat /dev/sysstat", &out); err != nil || !strings.Contains(out.String(), "uptime") {
		t.Fatalf("shell under the flood: %q, %v", out.String(), err)
	}

	// The stalled clients time out and the page answers again, while
	// they still hold their connections on the host side.
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + h.Forward.Addr().String() + "/")
	if err != nil {
		t.Fatalf("status page under the flood: %v; %v", err, stats())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status page under the flood: %s", resp.Status)
	}
	if st := stats(); st["conns_peak"] > limit || st["accepted"] <= limit {
		t.Fatalf("after the flood timed out: %v, want the peak at most %d and more than it accepted", st, limit)
	}
}
