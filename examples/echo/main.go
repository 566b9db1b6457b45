// Command echo echoes TCP and UDP on port 7 (RFC 862), over IPv4 and
// IPv6, and counts what it echoed in /echo/stats.
//
//	go run ./boot -app ./examples/echo
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"

	"github.com/ether9/ether9"
	"github.com/ether9/ether9/ns"
)

func main() { ether9.Config{Name: "echo"}.Main(serve) }

// stats are what the program echoed.
type stats struct {
	conns, tcpBytes, datagrams, udpBytes atomic.Uint64
}

func (s *stats) String() string {
	return fmt.Sprintf("tcp_conns: %d\ntcp_bytes: %d\nudp_datagrams: %d\nudp_bytes: %d\n",
		s.conns.Load(), s.tcpBytes.Load(), s.datagrams.Load(), s.udpBytes.Load())
}

func serve(ctx context.Context, m *ether9.Machine) error {
	var st stats
	if err := m.Bind("/echo/stats", ns.Text(st.String)); err != nil {
		return err
	}
	ln, err := m.Listen("tcp", ":7")
	if err != nil {
		return err
	}
	pc, err := m.ListenPacket("udp", ":7")
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- echoUDP(pc, &st) }()
	go func() { errc <- echoTCP(ln, &st) }()
	m.Log().Info("listening", "tcp", ln.Addr().String(), "udp", pc.LocalAddr().String())
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err // the supervisor restarts us; the listeners close first
	}
}

func echoTCP(ln net.Listener, st *stats) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		st.conns.Add(1)
		go func() {
			defer c.Close()
			n, _ := io.Copy(c, c)
			st.tcpBytes.Add(uint64(n))
		}()
	}
}

func echoUDP(pc net.PacketConn, st *stats) error {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("udp: %w", err)
		}
		st.datagrams.Add(1)
		st.udpBytes.Add(uint64(n))
		if _, err := pc.WriteTo(buf[:n], from); err != nil {
			return fmt.Errorf("udp reply to %v: %w", from, err)
		}
	}
}
