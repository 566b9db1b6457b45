package netstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/netstack/dhcp"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/qdisc/fifo"
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
	// TxQueue, if positive, puts a FIFO of that many packets per driver
	// queue in front of the endpoint (gVisor's qdisc/fifo): senders
	// return at once and one goroutine per driver queue hands what has
	// gathered to the driver in batches of up to 47, one doorbell per
	// batch. A full FIFO refuses the packet (TCP sends it again later).
	// The cost is one goroutine wake-up per burst, which a lone small
	// exchange does not notice; under QEMU a 16 MiB TCP send rings 260
	// doorbells instead of 11,300. Zero sends on the caller's goroutine,
	// one doorbell per WritePackets call.
	TxQueue int
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
	// Leases are the DHCP leases each interface got at start-up (nil where
	// static or fallen back); they are not updated. Lease(i) is current.
	Leases []*dhcp.Lease

	logf   func(format string, args ...any)
	cancel context.CancelFunc // stops the lease keepers
	keep   sync.WaitGroup

	mu     sync.Mutex
	leases []*dhcp.Lease // per interface, nil where static or fallen back
}

// Lease returns interface i's current DHCP lease, nil if it has none.
func (s *Stack) Lease(i int) *dhcp.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.leases) {
		return nil
	}
	return s.leases[i]
}

// DNS returns the DNS servers the current leases name.
func (s *Stack) DNS() []netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []netip.Addr
	for _, l := range s.leases {
		if l != nil {
			out = append(out, l.DNS...)
		}
	}
	return out
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
		leases: make([]*dhcp.Lease, len(ifs)),
		Leases: make([]*dhcp.Lease, len(ifs)),
		logf:   opt.Logf,
	}
	var ctx context.Context
	ctx, s.cancel = context.WithCancel(context.Background())
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
		nopt := stack.NICOptions{Name: ifc.NIC.Name()}
		if ifc.TxQueue > 0 {
			nopt.QDisc = fifo.New(ep, len(ep.queues), ifc.TxQueue)
		}
		if err := s.CreateNICWithOptions(id, ep, nopt); err != nil {
			ep.Close()
			return fail(fmt.Errorf("netstack: %s: create NIC: %s", ifc.NIC.Name(), err))
		}
	}
	for i, ifc := range ifs {
		if err := s.configure(ctx, i, ifc, opt); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// configure addresses interface i.
func (s *Stack) configure(ctx context.Context, i int, ifc Interface, opt StackOptions) error {
	id, name := NICID(i), ifc.NIC.Name()
	if ifc.DHCP {
		c, err := dhcp.NewClient(s.Stack, id, opt.DHCP)
		if err != nil {
			return fmt.Errorf("netstack: %s: %w", name, err)
		}
		l, err := c.Acquire(ctx)
		switch {
		case err == nil:
			opt.Logf("%s: dhcp %v gw %v", name, l.Addr, l.Router)
			if err := s.address(id, name, []netip.Prefix{l.Addr}, l.Router); err != nil {
				return err
			}
			s.mu.Lock()
			s.leases[i] = l
			s.mu.Unlock()
			s.Leases[i] = l
			s.keep.Add(1)
			go s.keepLease(ctx, i, c, l)
			return nil
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

// keepLease renews interface i's lease at its renewal time (T1), retries
// at half the remaining time while it lasts, and removes the address when
// the lease runs out or the server refuses it.
func (s *Stack) keepLease(ctx context.Context, i int, c *dhcp.Client, l *dhcp.Lease) {
	defer s.keep.Done()
	id, name := NICID(i), s.Endpoints[i].NIC().Name()
	got := time.Now()
	wait := l.Renew
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		nl, err := c.Renew(ctx, l)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			s.logf("%s: dhcp renewed %v for %v", name, nl.Addr, nl.Duration)
			s.mu.Lock()
			s.leases[i] = nl
			s.mu.Unlock()
			l, got, wait = nl, time.Now(), nl.Renew
			continue
		}
		left := l.Duration - time.Since(got)
		if errors.Is(err, dhcp.ErrRefused) || left <= 0 {
			s.logf("%s: dhcp lease on %v ends: %v", name, l.Addr, err)
			s.RemoveAddress(id, tcpip.AddrFromSlice(l.Addr.Addr().AsSlice()))
			s.SyncMulticast(id)
			s.mu.Lock()
			s.leases[i] = nil
			s.mu.Unlock()
			return
		}
		s.logf("%s: dhcp renew: %v; %v of the lease left", name, err, left)
		wait = max(left/2, time.Second)
	}
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
	s.SyncMulticast(id)
	if gw.IsValid() {
		dest, err := tcpip.NewSubnet(tcpip.AddrFromSlice(make([]byte, gw.BitLen()/8)), tcpip.MaskFromBytes(make([]byte, gw.BitLen()/8)))
		if err != nil {
			return fmt.Errorf("netstack: %s: default route: %w", name, errors.New(err.Error()))
		}
		s.AddRoute(tcpip.Route{Destination: dest, Gateway: tcpip.AddrFromSlice(gw.AsSlice()), NIC: id})
	}
	return nil
}

// SyncMulticast sets NIC id's multicast receive filter from the addresses
// the stack holds on it (Endpoint.SyncMulticast). The stack calls it when it
// changes addresses itself; a caller that adds or removes addresses
// through the embedded gVisor stack calls it afterwards.
func (s *Stack) SyncMulticast(id tcpip.NICID) {
	i := int(id) - 1
	if i < 0 || i >= len(s.Endpoints) {
		return
	}
	var addrs []netip.Addr
	for _, pa := range s.AllAddresses()[id] {
		if a, ok := netip.AddrFromSlice(pa.AddressWithPrefix.Address.AsSlice()); ok {
			addrs = append(addrs, a)
		}
	}
	s.Endpoints[i].SyncMulticast(addrs)
}

// Close removes every NIC (which closes the endpoints and their drivers)
// and stops the stack.
func (s *Stack) Close() {
	s.cancel()
	s.keep.Wait()
	for id := range s.NICInfo() {
		s.RemoveNIC(id)
	}
	for _, ep := range s.Endpoints {
		ep.Close()
	}
	s.Stack.Close()
	s.Stack.Wait()
}
