package main

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"

	"github.com/ether9/ether9"
	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/internal/simtest"
)

// TCP and UDP come back as sent, over IPv4 and IPv6, on the simulated
// igb; the stats file counts them.
func TestEcho(t *testing.T) {
	h, con := simtest.Run(t, ether9.Config{Name: "echo"}, serve, "igb")
	con.WaitFor(t, "echo: listening")
	guest, peer := simmachine.Addrs(0)
	data := make([]byte, 256<<10)
	rand.Read(data)
	for i, g := range guest {
		c := simtest.Dial(t, h.Peer.Stack, netip.AddrPortFrom(g.Addr(), 7))
		c.SetDeadline(time.Now().Add(simtest.Wait))
		done := make(chan error, 1)
		go func() {
			_, err := c.Write(data)
			c.(*gonet.TCPConn).CloseWrite()
			done <- err
		}()
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || <-done != nil || !bytes.Equal(got, data) {
			t.Fatalf("TCP echo over %v: %d of %d bytes back, equal %v, %v", g.Addr(), len(got), len(data), bytes.Equal(got, data), err)
		}

		src := peer[i].Addr()
		u, err := gonet.DialUDP(h.Peer.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(src.AsSlice())}, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(g.Addr().AsSlice()), Port: 7}, simtest.Proto(src))
		if err != nil {
			t.Fatal(err)
		}
		want := "datagram to " + g.Addr().String()
		buf := make([]byte, 1500)
		var back string
		// The first datagram may wait on neighbour resolution: send until
		// one comes back.
		for range 20 {
			u.Write([]byte(want))
			u.SetReadDeadline(time.Now().Add(time.Second))
			if n, err := u.Read(buf); err == nil {
				back = string(buf[:n])
				break
			}
		}
		u.Close()
		if back != want {
			t.Fatalf("UDP echo over %v: %q", g.Addr(), back)
		}
	}
	s, err := h.System.Namespace().ReadFile("/echo/stats")
	if err != nil || !strings.Contains(s, "tcp_conns: 2\n") || !strings.Contains(s, "tcp_bytes: 524288\n") {
		t.Errorf("/echo/stats:\n%s %v", s, err)
	}
}
