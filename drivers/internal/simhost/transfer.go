package simhost

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// transferTimeout bounds one transfer so a lost wake-up fails the test
// instead of hanging it; it is no speed target.
const transferTimeout = 5 * time.Minute

// chunk is how much one Write moves.
const chunk = 64 << 10

// TCP moves n random bytes over one connection from client to server
// (listening on dst) and checks the count and SHA-256 sum received.
// midway, when not nil, runs once half the data is written.
func TCP(t testing.TB, client, server *netstack.Stack, dst netip.Addr, n int, midway func()) {
	t.Helper()
	if err := transferTCP(client, server, dst, n, midway); err != nil {
		t.Fatal(err)
	}
}

// TCPConns runs conns connections at once from client to server, each
// moving n random bytes, so RSS spreads them over the queues.
func TCPConns(t testing.TB, client, server *netstack.Stack, dst netip.Addr, conns, n int) {
	t.Helper()
	errs := make(chan error, conns)
	for range conns {
		go func() { errs <- transferTCP(client, server, dst, n, nil) }()
	}
	for i := range conns {
		if err := <-errs; err != nil {
			t.Errorf("connection %d of %d: %v", i+1, conns, err)
		}
	}
}

func fullAddr(a netip.Addr, port uint16) tcpip.FullAddress {
	return tcpip.FullAddress{Addr: tcpip.AddrFromSlice(a.AsSlice()), Port: port}
}

func transferTCP(client, server *netstack.Stack, dst netip.Addr, n int, midway func()) error {
	ln, err := gonet.ListenTCP(server.Stack, fullAddr(dst, 0), ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	type result struct {
		sum []byte
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		h := sha256.New()
		m, err := io.Copy(h, c)
		got <- result{h.Sum(nil), m, err}
	}()
	c, err := gonet.DialTCP(client.Stack, fullAddr(dst, port), ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	data := make([]byte, n)
	rand.Read(data)
	for off := 0; off < n; off += chunk {
		if midway != nil && off >= n/2 {
			midway()
			midway = nil
		}
		if _, err := c.Write(data[off:min(off+chunk, n)]); err != nil {
			c.Close()
			return fmt.Errorf("write at %d: %w", off, err)
		}
	}
	c.Close()
	want := sha256.Sum256(data)
	select {
	case r := <-got:
		if r.err != nil || r.n != int64(n) || !bytes.Equal(r.sum, want[:]) {
			return fmt.Errorf("TCP: received %d of %d bytes (err %v), hash match %v", r.n, n, r.err, bytes.Equal(r.sum, want[:]))
		}
	case <-time.After(transferTimeout):
		return fmt.Errorf("TCP transfer of %d bytes timed out", n)
	}
	return nil
}

// UDPRoundTrip sends one datagram of each size from a (at src) to b (at
// dst) and checks that b's bound endpoint reads each back intact.
func UDPRoundTrip(t testing.TB, a, b *netstack.Stack, src, dst netip.Addr, sizes ...int) {
	t.Helper()
	to := fullAddr(dst, 9)
	from := fullAddr(src, 0)
	srv, err := gonet.DialUDP(b.Stack, &to, nil, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := gonet.DialUDP(a.Stack, &from, &to, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	buf := make([]byte, 65536)
	for _, n := range sizes {
		msg := make([]byte, n)
		rand.Read(msg)
		ok := false
		for try := 0; try < 5 && !ok; try++ { // the first may wait on ARP
			if _, err := cl.Write(msg); err != nil {
				t.Fatal(err)
			}
			srv.SetReadDeadline(time.Now().Add(time.Second))
			m, _, err := srv.ReadFrom(buf)
			ok = err == nil && bytes.Equal(buf[:m], msg)
		}
		if !ok {
			t.Fatalf("UDP datagram of %d bytes not received intact", n)
		}
	}
}
