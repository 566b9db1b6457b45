package testhost

import (
	"bytes"
	"crypto/rand"
	"net/netip"
	"testing"
	"time"

	"github.com/ether9/ether9/internal/transfer"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// TCP moves n random bytes over one connection from client to server
// (listening on dst) and checks the count and SHA-256 sum received.
// midway, when not nil, runs once half the data is written. A stream
// that stops moving fails with both stacks' counters (transfer.TCP).
func TCP(t testing.TB, client, server *netstack.Stack, dst netip.Addr, n int, midway func()) {
	t.Helper()
	if err := transfer.TCP(client, server, dst, n, transfer.Options{Midway: midway}); err != nil {
		t.Fatal(err)
	}
}

// TCPConns runs conns connections at once from client to server, each
// moving n random bytes, so RSS spreads them over the queues.
func TCPConns(t testing.TB, client, server *netstack.Stack, dst netip.Addr, conns, n int) {
	t.Helper()
	errs := make(chan error, conns)
	for range conns {
		go func() { errs <- transfer.TCP(client, server, dst, n, transfer.Options{}) }()
	}
	for i := range conns {
		if err := <-errs; err != nil {
			t.Errorf("connection %d of %d: %v", i+1, conns, err)
		}
	}
}

// UDPRoundTrip sends one datagram of each size from a (at src) to b (at
// dst) and checks that b's bound endpoint reads each back intact.
func UDPRoundTrip(t testing.TB, a, b *netstack.Stack, src, dst netip.Addr, sizes ...int) {
	t.Helper()
	to := transfer.FullAddr(dst, 9)
	from := transfer.FullAddr(src, 0)
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
