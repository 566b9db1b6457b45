// Package ntp asks NTP servers for the time over a gVisor stack: the
// protocol is github.com/beevik/ntp's, dialled through a gVisor UDP
// socket instead of the host's.
package ntp

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/beevik/ntp"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Port is NTP's UDP port.
const Port = 123

// Result is one server's answer.
type Result struct {
	Server netip.AddrPort
	// Offset is how far the local clock is behind the server's (add it
	// to time.Now), RTT the round trip, both estimated by the protocol.
	Offset, RTT time.Duration
	Stratum     uint8
}

// Query asks server (port Port when zero) for the time over s and
// checks the answer (a kiss of death, an unsynchronised server or one
// claiming stratum 0 or above 15 is an error).
func Query(s *stack.Stack, server netip.AddrPort, timeout time.Duration) (*Result, error) {
	if server.Port() == 0 {
		server = netip.AddrPortFrom(server.Addr(), Port)
	}
	dial := func(_, raddr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(raddr)
		if err != nil {
			return nil, err
		}
		proto := ipv4.ProtocolNumber
		if !ap.Addr().Is4() {
			proto = ipv6.ProtocolNumber
		}
		to := tcpip.FullAddress{Addr: tcpip.AddrFromSlice(ap.Addr().AsSlice()), Port: ap.Port()}
		c, err := gonet.DialUDP(s, nil, &to, proto)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	r, err := ntp.QueryWithOptions(net.JoinHostPort(server.Addr().String(), strconv.Itoa(int(server.Port()))), ntp.QueryOptions{Timeout: timeout, Dialer: dial})
	if err != nil {
		return nil, fmt.Errorf("ntp: %v: %w", server, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("ntp: %v: %w", server, err)
	}
	return &Result{Server: server, Offset: r.ClockOffset, RTT: r.RTT, Stratum: r.Stratum}, nil
}
