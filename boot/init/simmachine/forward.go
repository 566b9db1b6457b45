package simmachine

import (
	"context"
	"io"
	"net"
	"net/netip"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// forward accepts host connections on ln and splices each to a TCP
// connection the peer's stack opens to the machine at to: what QEMU's
// hostfwd does.
func forward(ctx context.Context, ln net.Listener, p *Peer, to netip.AddrPort, logf func(string, ...any)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				logf("forward: %v", err)
			}
			return
		}
		go func() {
			defer c.Close()
			g, err := gonet.DialContextTCP(ctx, p.Stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(to.Addr().As4()), Port: to.Port()}, ipv4.ProtocolNumber)
			if err != nil {
				logf("forward: dial %v: %v", to, err)
				return
			}
			defer g.Close()
			splice(c, g)
		}()
	}
}

type closeWriter interface{ CloseWrite() error }

// splice copies both ways; when one side finishes sending, the other is
// told with a half-close so that request bodies can end.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(closeWriter); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
}
