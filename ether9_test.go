package ether9_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/ether9/ether9"
	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/internal/simtest"
	"github.com/ether9/ether9/ns"
)

const waitFor = simtest.Wait

func run(t *testing.T, cfg ether9.Config, p ether9.Program, nics ...string) (*simmachine.Host, *simtest.Console) {
	return simtest.Run(t, cfg, p, nics...)
}

func dialPeer(t *testing.T, s *stack.Stack, to netip.AddrPort) net.Conn {
	return simtest.Dial(t, s, to)
}

var proto = simtest.Proto

// echo serves TCP and UDP echo on port 7 of every address.
func echo(ctx context.Context, m *ether9.Machine) error {
	ln, err := m.Listen("tcp", ":7")
	if err != nil {
		return err
	}
	pc, err := m.ListenPacket("udp", ":7")
	if err != nil {
		return err
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	m.Logf("echo on %v", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}

// roundTrip writes a line to c and reads it back.
func roundTrip(t *testing.T, c net.Conn, line string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(waitFor))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("echo of %q: %q, %v", line, got, err)
	}
}

// A listener on an empty host takes IPv4 and IPv6; UDP too.
func TestListenDualStack(t *testing.T) {
	h, con := run(t, ether9.Config{Name: "echo"}, echo)
	con.WaitFor(t, "echo: echo on")
	guest, peer := simmachine.Addrs(0)
	for _, g := range guest {
		c := dialPeer(t, h.Peer.Stack, netip.AddrPortFrom(g.Addr(), 7))
		roundTrip(t, c, "over "+g.Addr().String())
		c.Close()
	}
	for i, g := range guest {
		src := peer[i].Addr()
		u, err := gonet.DialUDP(h.Peer.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(src.AsSlice())}, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(g.Addr().AsSlice()), Port: 7}, proto(src))
		if err != nil {
			t.Fatal(err)
		}
		// A datagram may meet an unresolved neighbour: send until one
		// comes back.
		u.SetReadDeadline(time.Now().Add(waitFor))
		buf := make([]byte, 64)
		var got string
		for range 20 {
			u.Write([]byte("udp " + g.Addr().String()))
			u.SetReadDeadline(time.Now().Add(time.Second))
			if n, err := u.Read(buf); err == nil {
				got = string(buf[:n])
				break
			}
		}
		u.Close()
		if got != "udp "+g.Addr().String() {
			t.Errorf("UDP echo over %v: %q", g.Addr(), got)
		}
	}
}

// tcp6 listens on IPv6 alone, tcp4 on IPv4 alone; a bad address says so.
func TestListenFamilies(t *testing.T) {
	errc := make(chan error, 1)
	done := make(chan struct{})
	_, con := run(t, ether9.Config{}, func(ctx context.Context, m *ether9.Machine) error {
		defer close(done)
		var errs []error
		l6, err := m.Listen("tcp6", ":80")
		errs = append(errs, err)
		l4, err := m.Listen("tcp4", ":80")
		errs = append(errs, err)
		if l6 != nil && l4 != nil {
			l6.Close()
			l4.Close()
		}
		for _, bad := range [][2]string{{"tcp4", "[::1]:80"}, {"tcp", "name:80"}, {"sctp", ":1"}, {"tcp", ":70000"}} {
			if l, err := m.Listen(bad[0], bad[1]); err == nil {
				l.Close()
				errs = append(errs, fmt.Errorf("Listen(%q, %q) accepted", bad[0], bad[1]))
			}
		}
		errc <- errors.Join(errs...)
		<-ctx.Done()
		return nil
	})
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitFor):
		t.Fatalf("the program never ran:\n%s", con)
	}
}

// dnsServer answers A and AAAA questions for names on the peer's stack,
// UDP port 53, counting the questions.
func dnsServer(t *testing.T, s *stack.Stack, at netip.Addr, names map[string][]netip.Addr) *atomic.Int64 {
	t.Helper()
	var asked atomic.Int64
	pc, err := gonet.DialUDP(s, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(at.AsSlice()), Port: 53}, nil, proto(at))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			hdr, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			asked.Add(1)
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true})
			b.EnableCompression()
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
			for _, a := range names[q.Name.String()] {
				switch {
				case q.Type == dnsmessage.TypeA && a.Is4():
					b.AResource(rh, dnsmessage.AResource{A: a.As4()})
				case q.Type == dnsmessage.TypeAAAA && a.Is6():
					b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
				}
			}
			out, err := b.Finish()
			if err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return &asked
}

// The resolver asks ether9.dns's server over the stack, Dial and the
// HTTP client use it, and IPv6 names work too.
func TestResolverAndHTTPClient(t *testing.T) {
	type result struct {
		addrs []netip.Addr
		body  string
		err   error
	}
	got := make(chan result, 1)
	var h *simmachine.Host
	ready := make(chan struct{})
	h, con := run(t, ether9.Config{Cmdline: "ether9.dns=10.0.2.2"}, func(ctx context.Context, m *ether9.Machine) error {
		<-ready
		var r result
		defer func() { got <- r }()
		if r.addrs, r.err = m.Resolver().LookupNetIP(ctx, "ip", "peer.test."); r.err != nil {
			return nil
		}
		for _, url := range []string{"http://peer.test.:8000/", "http://[fd00:0:0:2::2]:8000/"} {
			resp, err := m.HTTPClient().Get(url)
			if err != nil {
				r.err = err
				return nil
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r.body += string(b)
		}
		return nil
	})
	_, peer := simmachine.Addrs(0)
	asked := dnsServer(t, h.Peer.Stack, peer[0].Addr(), map[string][]netip.Addr{"peer.test.": {peer[0].Addr(), peer[1].Addr()}})
	ln, err := gonet.ListenTCP(h.Peer.Stack, tcpip.FullAddress{Port: 8000}, ipv6.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "peer saw %s;", r.Host)
	}))
	close(ready)
	var r result
	select {
	case r = <-got:
	case <-time.After(waitFor):
		t.Fatalf("the program never answered:\n%s", con)
	}
	if r.err != nil {
		t.Fatalf("%v (the DNS server was asked %d times)", r.err, asked.Load())
	}
	if len(r.addrs) != 2 || !strings.Contains(fmt.Sprint(r.addrs), "10.0.2.2") || !strings.Contains(fmt.Sprint(r.addrs), "fd00:0:0:2::2") {
		t.Errorf("peer.test. = %v", r.addrs)
	}
	if r.body != "peer saw peer.test.:8000;peer saw [fd00:0:0:2::2]:8000;" {
		t.Errorf("bodies %q", r.body)
	}
	if asked.Load() == 0 {
		t.Error("the DNS server was never asked")
	}
}

// Without a DNS server the resolver says why.
func TestResolverWithoutServers(t *testing.T) {
	got := make(chan error, 1)
	run(t, ether9.Config{}, func(ctx context.Context, m *ether9.Machine) error {
		_, err := m.Resolver().LookupNetIP(ctx, "ip4", "peer.test.")
		got <- err
		return nil
	})
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "no DNS server") {
			t.Fatalf("lookup without servers: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the program never answered")
	}
}

// A program that panics is reported with its stack and restarted, and
// the restart can listen where the failed run listened.
func TestPanicRestarts(t *testing.T) {
	var runs atomic.Int64
	h, con := run(t, ether9.Config{Name: "flaky"}, func(ctx context.Context, m *ether9.Machine) error {
		n := runs.Add(1)
		ln, err := m.Listen("tcp", ":7")
		if err != nil {
			return err
		}
		if err := m.Bind("/flaky/runs", ns.Text(func() string { return fmt.Sprint(n) })); err != nil {
			return err
		}
		switch n {
		case 1:
			panic("first run fails")
		case 2:
			return errors.New("second run fails too")
		}
		m.Logf("run %d listening", n)
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			io.Copy(c, c)
			c.Close()
		}
	})
	con.WaitFor(t, "flaky: run 3 listening")
	for _, want := range []string{"flaky: panic: first run fails", "ether9_test.TestPanicRestarts", "flaky: restart 1 in", "flaky: returned: second run fails too", "flaky: restart 2 in"} {
		if !strings.Contains(con.String(), want) {
			t.Errorf("console lacks %q", want)
		}
	}
	guest, _ := simmachine.Addrs(0)
	c := dialPeer(t, h.Peer.Stack, netip.AddrPortFrom(guest[0].Addr(), 7))
	roundTrip(t, c, "third time")
	c.Close()
	if s, err := h.System.Namespace().ReadFile("/flaky/runs"); err != nil || s != "3" {
		t.Errorf("/flaky/runs = %q, %v", s, err)
	}
}

// The logger writes console lines with the program's name.
func TestLog(t *testing.T) {
	h, con := run(t, ether9.Config{Name: "logger"}, func(ctx context.Context, m *ether9.Machine) error {
		m.Log().With("port", 7).WithGroup("req").Warn("slow answer", "from", "10.0.2.2", "took", "2 s")
		return nil
	})
	con.WaitFor(t, `logger: WARN slow answer port=7 req.from=10.0.2.2 req.took="2 s"`)
	con.WaitFor(t, "logger: finished")
	if s, err := h.System.Namespace().ReadFile("/dev/kmesg"); err != nil || !strings.Contains(s, "logger: WARN slow answer") {
		t.Errorf("/dev/kmesg lacks the line: %v\n%s", err, s)
	}
}

// The built-in roots are Mozilla's list, ISRG's among them.
func TestRoots(t *testing.T) {
	p, err := ether9.Roots()
	if err != nil {
		t.Fatal(err)
	}
	subjects := p.Subjects() //nolint:staticcheck // a pool built here, not the system's
	found := false
	for _, s := range subjects {
		found = found || strings.Contains(string(s), "ISRG Root X1")
	}
	if len(subjects) < 100 || !found {
		t.Fatalf("%d roots, ISRG Root X1 among them: %v", len(subjects), found)
	}
}
