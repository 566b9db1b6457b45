package netstack

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

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
	// DHCP keeps a DHCPv4 lease (address, routes, DNS, NTP) for as long
	// as the stack runs; NewStack does not wait for it (WaitLease does).
	// Addrs, if any, are used while there is no lease.
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
	// OnLease, if set, is called when interface i gets, renews or loses
	// (l nil) its lease. It must not block.
	OnLease func(i int, l *dhcp.Lease)
}

// Stack is a gVisor stack with IPv4, IPv6, ARP, ICMP, TCP and UDP over
// ether9 NICs.
type Stack struct {
	*stack.Stack
	Endpoints []*Endpoint

	logf    func(format string, args ...any)
	onLease func(i int, l *dhcp.Lease)
	cancel  context.CancelFunc // stops the lease keepers
	keep    sync.WaitGroup

	ndp *ndpDispatcher

	mu     sync.Mutex
	leases []leased      // per interface
	change chan struct{} // closed and replaced when a lease changes
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
	ndp := newNDPDispatcher()
	h := &ndpHandler{ndpDispatcher: ndp}
	s := &Stack{
		Stack: stack.New(stack.Options{
			NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocolWithOptions(ndpOptions(h)), arp.NewProtocol},
			TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
		}),
		leases:  make([]leased, len(ifs)),
		change:  make(chan struct{}),
		logf:    opt.Logf,
		onLease: opt.OnLease,
		ndp:     ndp,
	}
	h.s = s
	fwd := &forwardHold{ours: func(id tcpip.NICID) bool { return id >= NICID(0) && id <= NICID(len(ifs)-1) }}
	s.SetNFTables(forwardHook{fwd})
	s.SetNFTablesConfigured(true)
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
		if ifc.DHCP {
			// A link that comes back has the lease checked at once.
			user := ifc.Endpoint.OnLink
			ifc.Endpoint.OnLink = func(l nic.Link) {
				if user != nil {
					user(l)
				}
				if l.Up {
					s.linkUp(i)
				}
			}
		}
		ep, err := New(ifc.NIC, ifc.Endpoint)
		if err != nil {
			return fail(fmt.Errorf("netstack: interface %d: %w", i, err))
		}
		ep.fwd = fwd
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
		// The link-local address is there: pass its groups.
		s.SyncMulticast(id)
	}
	// The NDP work starts once Endpoints is whole: it reads it.
	s.keep.Add(1)
	go func() {
		defer s.keep.Done()
		ndp.run(ctx)
	}()
	for i, ifc := range ifs {
		if err := s.configure(ctx, i, ifc, opt); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// configure addresses interface i: its static addresses, or a DHCP
// client that keeps a lease from now on.
func (s *Stack) configure(ctx context.Context, i int, ifc Interface, opt StackOptions) error {
	id, name := NICID(i), ifc.NIC.Name()
	if ifc.DHCP {
		c, err := dhcp.NewClient(s.Stack, id, opt.DHCP)
		if err != nil {
			return fmt.Errorf("netstack: %s: %w", name, err)
		}
		s.mu.Lock()
		s.leases[i] = leased{client: c, fallback: ifc.Addrs, gateway: ifc.Gateway}
		s.mu.Unlock()
		s.keep.Add(1)
		go func() {
			defer s.keep.Done()
			c.Run(ctx, s.leaseHandler(i, name))
		}()
		return nil
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
		pa := protocolAddress(a)
		if err := s.AddProtocolAddress(id, pa, stack.AddressProperties{}); err != nil {
			return fmt.Errorf("netstack: %s: add %v: %s", name, a, err)
		}
		s.AddRoute(tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: id})
	}
	s.SyncMulticast(id)
	if gw.IsValid() {
		s.AddRoute(tcpip.Route{Destination: anySubnet(gw), Gateway: addrOf(gw), NIC: id})
	}
	return nil
}

// unaddress takes away what address added.
func (s *Stack) unaddress(id tcpip.NICID, addrs []netip.Prefix, gw netip.Addr) {
	for _, a := range addrs {
		pa := protocolAddress(a)
		sub := pa.AddressWithPrefix.Subnet()
		s.RemoveRoutes(func(r tcpip.Route) bool { return r.NIC == id && r.Destination == sub && r.Gateway.Len() == 0 })
		s.RemoveAddress(id, pa.AddressWithPrefix.Address)
	}
	if gw.IsValid() {
		s.RemoveRoutes(func(r tcpip.Route) bool { return r.NIC == id && r.Gateway == addrOf(gw) })
	}
	s.SyncMulticast(id)
}

// protocolAddress is a as gVisor's address with prefix.
func protocolAddress(a netip.Prefix) tcpip.ProtocolAddress {
	proto := ipv4.ProtocolNumber
	if !a.Addr().Is4() {
		proto = ipv6.ProtocolNumber
	}
	return tcpip.ProtocolAddress{
		Protocol:          proto,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: addrOf(a.Addr()), PrefixLen: a.Bits()},
	}
}

// anySubnet is the default route's destination in gw's family.
func anySubnet(gw netip.Addr) tcpip.Subnet {
	n := gw.BitLen() / 8
	sub, _ := tcpip.NewSubnet(tcpip.AddrFromSlice(make([]byte, n)), tcpip.MaskFromBytes(make([]byte, n)))
	return sub
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
