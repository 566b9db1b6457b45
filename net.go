package ether9

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// listenBacklog is the accept queue of a listener.
const listenBacklog = 128

// Listen listens on the machine's stack as net.Listen does: network
// "tcp", "tcp4" or "tcp6", address "host:port" with host empty or an IP
// literal. "tcp" on an empty host takes IPv4 and IPv6 both. The listener
// is closed when this run of the program ends.
func (m *Machine) Listen(network, address string) (net.Listener, error) {
	fail := func(err error) (net.Listener, error) {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	ep, wq, err := m.bind(network, address, "tcp")
	if err != nil {
		return fail(err)
	}
	if err := ep.Listen(listenBacklog); err != nil {
		ep.Close()
		return fail(fmt.Errorf("%s: %s", address, err))
	}
	l := &listener{TCPListener: gonet.NewTCPListener(m.Stack().Stack, wq, ep), m: m}
	m.track(l)
	return l, nil
}

// ListenPacket opens a UDP socket on the machine's stack as
// net.ListenPacket does: network "udp", "udp4" or "udp6". It is closed
// when this run of the program ends.
func (m *Machine) ListenPacket(network, address string) (net.PacketConn, error) {
	ep, wq, err := m.bind(network, address, "udp")
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	c := &packetConn{UDPConn: gonet.NewUDPConn(wq, ep), m: m}
	m.track(c)
	return c, nil
}

// bind makes a TCP or UDP endpoint bound to address.
func (m *Machine) bind(network, address, want string) (tcpip.Endpoint, *waiter.Queue, error) {
	family, err := family(network, want)
	if err != nil {
		return nil, nil, err
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, nil, fmt.Errorf("port %q: want 0 to 65535", portStr)
	}
	var addr netip.Addr
	if host != "" {
		if addr, err = netip.ParseAddr(host); err != nil {
			return nil, nil, fmt.Errorf("host %q: want an IP address or nothing", host)
		}
		addr = addr.Unmap()
	}
	proto, v6only := ipv6.ProtocolNumber, family == "6"
	switch {
	case family == "4" && addr.Is6() || family == "6" && addr.Is4():
		return nil, nil, fmt.Errorf("%s is not an address of %s", addr, network)
	case family == "4" || addr.Is4():
		proto, v6only = ipv4.ProtocolNumber, false
	case addr.Is6():
		v6only = true
	}
	transport := tcp.ProtocolNumber
	if want == "udp" {
		transport = udp.ProtocolNumber
	}
	var wq waiter.Queue
	ep, terr := m.Stack().NewEndpoint(transport, proto, &wq)
	if terr != nil {
		return nil, nil, errors.New(terr.String())
	}
	ep.SocketOptions().SetV6Only(v6only)
	ep.SocketOptions().SetReuseAddress(true)
	fa := tcpip.FullAddress{Port: uint16(port)}
	if addr.IsValid() && !addr.IsUnspecified() {
		fa.Addr = tcpip.AddrFromSlice(addr.AsSlice())
	}
	if terr := ep.Bind(fa); terr != nil {
		ep.Close()
		return nil, nil, fmt.Errorf("bind %s: %s", address, terr)
	}
	return ep, &wq, nil
}

// family checks network against the transport want ("tcp", "udp") and
// says which IP versions it allows: "4", "6" or "" for both.
func family(network, want string) (string, error) {
	switch network {
	case want:
		return "", nil
	case want + "4":
		return "4", nil
	case want + "6":
		return "6", nil
	}
	return "", net.UnknownNetworkError(network)
}

// Dial connects over the machine's stack as net.Dial does: network
// "tcp", "tcp4", "tcp6", "udp", "udp4" or "udp6"; a host name is
// resolved with Resolver.
func (m *Machine) Dial(network, address string) (net.Conn, error) {
	return m.DialContext(context.Background(), network, address)
}

// DialContext is Dial bounded by ctx.
func (m *Machine) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return m.dial(ctx, network, address)
}

// dial resolves address and tries its addresses in order, as net.Dialer
// does without Happy Eyeballs.
func (e *env) dial(ctx context.Context, network, address string) (net.Conn, error) {
	fail := func(err error) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	want := "tcp"
	if len(network) >= 3 && network[:3] == "udp" {
		want = "udp"
	}
	fam, err := family(network, want)
	if err != nil {
		return fail(err)
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return fail(err)
	}
	port, err := e.resolver.LookupPort(ctx, want, portStr)
	if err != nil {
		return fail(err)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else {
		if addrs, err = e.resolver.LookupNetIP(ctx, "ip"+fam, host); err != nil {
			return fail(err)
		}
	}
	var errs []error
	for _, a := range addrs {
		a = a.Unmap()
		if fam == "4" && !a.Is4() || fam == "6" && a.Is4() {
			continue
		}
		c, err := e.dialAddr(ctx, want, netip.AddrPortFrom(a, uint16(port)))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return fail(fmt.Errorf("%s: no address of %s", host, network))
	}
	return fail(errors.Join(errs...))
}

// dialAddr connects to one address.
func (e *env) dialAddr(ctx context.Context, want string, to netip.AddrPort) (net.Conn, error) {
	proto := ipv6.ProtocolNumber
	if to.Addr().Is4() {
		proto = ipv4.ProtocolNumber
	}
	fa := tcpip.FullAddress{Addr: tcpip.AddrFromSlice(to.Addr().AsSlice()), Port: to.Port()}
	s := e.sys.Stack().Stack
	if want == "udp" {
		c, err := gonet.DialUDP(s, nil, &fa, proto)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", to, err)
		}
		return c, nil
	}
	c, err := gonet.DialContextTCP(ctx, s, fa, proto)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", to, err)
	}
	return c, nil
}

// dialDNS is the resolver's way out: whatever server Go's resolver
// picked from a resolv.conf the image has not got, the query goes to the
// machine's DNS servers in turn.
func (e *env) dialDNS(ctx context.Context, network, _ string) (net.Conn, error) {
	servers := e.sys.DNS()
	if len(servers) == 0 {
		return nil, errors.New("no DNS server: DHCP named none and ether9.dns= is not set")
	}
	a := servers[int(e.dnsNext.Add(1)-1)%len(servers)]
	want := "udp"
	if network == "tcp" || network == "tcp4" || network == "tcp6" {
		want = "tcp"
	}
	return e.dialAddr(ctx, want, netip.AddrPortFrom(a, 53))
}

// listener forgets itself in its run when closed.
type listener struct {
	*gonet.TCPListener
	m *Machine
}

func (l *listener) Close() error {
	l.m.untrack(l)
	return l.TCPListener.Close()
}

// packetConn forgets itself in its run when closed.
type packetConn struct {
	*gonet.UDPConn
	m *Machine
}

func (c *packetConn) Close() error {
	c.m.untrack(c)
	return c.UDPConn.Close()
}
