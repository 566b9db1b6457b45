package netstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/netstack/dhcp"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// Interface is one NIC to bring up and how to address it.
type Interface struct {
	NIC nic.NIC
	// Addrs are static addresses (IPv4 or IPv6) with their prefix
	// lengths. With DHCP they are the fallback, used when no lease comes.
	Addrs []netip.Prefix
	// Gateway, if valid, is the default router through this NIC. A DHCP
	// lease's router takes its place.
	Gateway netip.Addr
	// DHCP asks a DHCPv4 server for the address, mask, router and DNS.
	DHCP bool
	// Endpoint tunes the link endpoint.
	Endpoint Options
}

// StackOptions are the stack-wide settings.
type StackOptions struct {
	DHCP dhcp.Config
	// Logf reports what was configured. Default: discard.
	Logf func(format string, args ...any)
}

// Stack is a gVisor stack with IPv4, IPv6, ARP, ICMP, TCP and UDP over
// ether9 NICs.
type Stack struct {
	*stack.Stack
	Endpoints []*Endpoint
	// Leases holds each interface's DHCP lease, nil where the interface is
	// static or fell back to its static addresses.
	Leases []*dhcp.Lease
	// DNS collects the servers the leases named.
	DNS []netip.Addr
}

// NICID is the gVisor NIC id of interface i (in NewStack's order).
func NICID(i int) tcpip.NICID { return tcpip.NICID(i + 1) }

// NewStack builds a stack over ifs and configures each interface: static
// addresses, or DHCP with the static addresses as fallback, and a default
// route. On error everything built so far is closed again, NICs included.
func NewStack(opt StackOptions, ifs ...Interface) (*Stack, error) {
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	s := &Stack{
		Stack: stack.New(stack.Options{
			NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol, arp.NewProtocol},
			TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
		}),
		Leases: make([]*dhcp.Lease, len(ifs)),
	}
	// Large transfers want windows bigger than gVisor's defaults.
	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	bufs := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4 << 10, Default: 1 << 20, Max: 8 << 20}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &bufs)
	sbufs := tcpip.TCPSendBufferSizeRangeOption{Min: 4 << 10, Default: 1 << 20, Max: 8 << 20}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sbufs)

	fail := func(err error) (*Stack, error) {
		for _, ifc := range ifs[len(s.Endpoints):] {
			if ifc.NIC != nil {
				ifc.NIC.Close()
			}
		}
		s.Close()
		return nil, err
	}
	for i, ifc := range ifs {
		ep, err := New(ifc.NIC, ifc.Endpoint)
		if err != nil {
			return fail(fmt.Errorf("netstack: interface %d: %w", i, err))
		}
		s.Endpoints = append(s.Endpoints, ep)
		id := NICID(i)
		if err := s.CreateNICWithOptions(id, ep, stack.NICOptions{Name: ifc.NIC.Name()}); err != nil {
			ep.Close()
			return fail(fmt.Errorf("netstack: %s: create NIC: %s", ifc.NIC.Name(), err))
		}
	}
	for i, ifc := range ifs {
		if err := s.configure(i, ifc, opt); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// configure addresses interface i.
func (s *Stack) configure(i int, ifc Interface, opt StackOptions) error {
	id, name := NICID(i), ifc.NIC.Name()
	if ifc.DHCP {
		c, err := dhcp.NewClient(s.Stack, id, opt.DHCP)
		if err != nil {
			return fmt.Errorf("netstack: %s: %w", name, err)
		}
		l, err := c.Acquire(context.Background())
		switch {
		case err == nil:
			s.Leases[i] = l
			s.DNS = append(s.DNS, l.DNS...)
			opt.Logf("%s: dhcp %v gw %v", name, l.Addr, l.Router)
			return s.address(id, name, []netip.Prefix{l.Addr}, l.Router)
		case len(ifc.Addrs) == 0:
			return fmt.Errorf("netstack: %s: %w", name, err)
		default:
			opt.Logf("%s: %v; using static %v", name, err, ifc.Addrs)
		}
	}
	if err := s.address(id, name, ifc.Addrs, ifc.Gateway); err != nil {
		return err
	}
	for _, a := range ifc.Addrs {
		opt.Logf("%s: addr %v", name, a)
	}
	return nil
}

// address adds addrs to NIC id with their on-link routes, and a default
// route through gw when it is valid.
func (s *Stack) address(id tcpip.NICID, name string, addrs []netip.Prefix, gw netip.Addr) error {
	for _, a := range addrs {
		if !a.IsValid() {
			return fmt.Errorf("netstack: %s: invalid address %v", name, a)
		}
		proto := ipv4.ProtocolNumber
		if !a.Addr().Is4() {
			proto = ipv6.ProtocolNumber
		}
		pa := tcpip.ProtocolAddress{
			Protocol:          proto,
			AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFromSlice(a.Addr().AsSlice()), PrefixLen: a.Bits()},
		}
		if err := s.AddProtocolAddress(id, pa, stack.AddressProperties{}); err != nil {
			return fmt.Errorf("netstack: %s: add %v: %s", name, a, err)
		}
		s.AddRoute(tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: id})
	}
	if gw.IsValid() {
		dest, err := tcpip.NewSubnet(tcpip.AddrFromSlice(make([]byte, gw.BitLen()/8)), tcpip.MaskFromBytes(make([]byte, gw.BitLen()/8)))
		if err != nil {
			return fmt.Errorf("netstack: %s: default route: %w", name, errors.New(err.Error()))
		}
		s.AddRoute(tcpip.Route{Destination: dest, Gateway: tcpip.AddrFromSlice(gw.AsSlice()), NIC: id})
	}
	return nil
}

// Close removes every NIC (which closes the endpoints and their drivers)
// and stops the stack.
func (s *Stack) Close() {
	for id := range s.NICInfo() {
		s.RemoveNIC(id)
	}
	for _, ep := range s.Endpoints {
		ep.Close()
	}
	s.Stack.Close()
	s.Stack.Wait()
}
