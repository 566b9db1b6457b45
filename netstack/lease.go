package netstack

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"time"

	"github.com/ether9/ether9/netstack/dhcp"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// leased is an interface's DHCP client and what its lease put in place.
type leased struct {
	client   *dhcp.Client // nil where static
	fallback []netip.Prefix
	gateway  netip.Addr
	// Held while there is no lease: the fallback addresses.
	static bool
	// What the current lease added: its address and routes.
	addr   netip.Prefix
	routes []tcpip.Route
}

// Lease returns interface i's current DHCP lease, nil if it has none.
func (s *Stack) Lease(i int) *dhcp.Lease {
	if c := s.client(i); c != nil {
		return c.Lease()
	}
	return nil
}

// DHCP returns interface i's DHCP client, nil where static.
func (s *Stack) DHCP(i int) *dhcp.Client { return s.client(i) }

func (s *Stack) client(i int) *dhcp.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.leases) {
		return nil
	}
	return s.leases[i].client
}

// DNS returns the DNS servers the current leases name, then those the
// last router advertisement named.
func (s *Stack) DNS() []netip.Addr {
	var out []netip.Addr
	for i := range s.Endpoints {
		if l := s.Lease(i); l != nil {
			out = append(out, l.DNS...)
		}
	}
	return append(out, s.ndp.ndpDNS()...)
}

// WaitLease waits until interface i holds a lease and returns it.
func (s *Stack) WaitLease(ctx context.Context, i int) (*dhcp.Lease, error) {
	if s.client(i) == nil {
		return nil, fmt.Errorf("netstack: interface %d has no DHCP", i)
	}
	for {
		s.mu.Lock()
		ch := s.change
		s.mu.Unlock()
		if l := s.Lease(i); l != nil {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("netstack: interface %d: waiting for a lease: %w", i, ctx.Err())
		case <-ch:
		}
	}
}

func (s *Stack) linkUp(i int) {
	if c := s.client(i); c != nil {
		c.LinkUp()
	}
}

// changed wakes WaitLease and tells OnLease.
func (s *Stack) changed(i int, l *dhcp.Lease) {
	s.mu.Lock()
	close(s.change)
	s.change = make(chan struct{})
	s.mu.Unlock()
	if s.onLease != nil {
		s.onLease(i, l)
	}
}

// leaseHandler configures interface i as its DHCP client says.
func (s *Stack) leaseHandler(i int, name string) dhcp.Handler {
	failures := 0
	return dhcp.Handler{
		Bound: func(old, l *dhcp.Lease) {
			failures = 0
			if old != nil && old.Addr == l.Addr && sameRoutes(old, l) {
				s.logf("%s: dhcp renewed %v for %v", name, l.Addr, l.Duration)
				s.changed(i, l)
				return
			}
			s.unlease(i)
			if err := s.lease(i, name, l); err != nil {
				s.logf("%s: dhcp %v: %v", name, l.Addr, err)
			} else {
				if l.Router.IsValid() {
					s.logf("%s: dhcp %v gw %v", name, l.Addr, l.Router)
				} else {
					s.logf("%s: dhcp %v, no router offered", name, l.Addr)
				}
			}
			s.changed(i, l)
		},
		Unbound: func(l *dhcp.Lease, why error) {
			s.logf("%s: dhcp lease on %v ends: %v", name, l.Addr, why)
			s.unlease(i)
			s.useFallback(i, name)
			s.changed(i, nil)
		},
		Failed: func(err error, wait time.Duration) {
			failures++
			// A server that stays away for days must not fill the
			// console: the 1st, 2nd, 4th, 8th... failure is told.
			if bits.OnesCount(uint(failures)) == 1 {
				s.logf("%s: %v (failure %d); DISCOVER again in %v", name, err, failures, wait.Round(time.Millisecond))
			}
			s.useFallback(i, name)
		},
		Retry: func(l *dhcp.Lease, err error, wait time.Duration) {
			s.logf("%s: %v; keeping %v, again in %v", name, err, l.Addr, wait.Round(time.Millisecond))
		},
	}
}

func sameRoutes(a, b *dhcp.Lease) bool {
	if a.Router != b.Router || len(a.Routes) != len(b.Routes) || a.MTU != b.MTU {
		return false
	}
	for i := range a.Routes {
		if a.Routes[i] != b.Routes[i] {
			return false
		}
	}
	return true
}

// useFallback puts interface i's static addresses in place while it has
// no lease.
func (s *Stack) useFallback(i int, name string) {
	s.mu.Lock()
	st := s.leases[i]
	if st.static || len(st.fallback) == 0 {
		s.mu.Unlock()
		return
	}
	s.leases[i].static = true
	s.mu.Unlock()
	if err := s.address(NICID(i), name, st.fallback, st.gateway); err != nil {
		s.logf("%s: static %v: %v", name, st.fallback, err)
		return
	}
	s.logf("%s: no lease; using static %v", name, st.fallback)
}

// lease adds l's address and routes to interface i, in place of the
// fallback addresses.
func (s *Stack) lease(i int, name string, l *dhcp.Lease) error {
	id := NICID(i)
	s.mu.Lock()
	st := s.leases[i]
	s.leases[i].static = false
	s.mu.Unlock()
	if st.static {
		s.unaddress(id, st.fallback, st.gateway)
	}
	mtu := uint32(0)
	if l.MTU > 0 && uint32(l.MTU) < s.Endpoints[i].MTU() {
		mtu = uint32(l.MTU) // the network's is smaller than the link's
	}
	pa := protocolAddress(l.Addr)
	if err := s.AddProtocolAddress(id, pa, stack.AddressProperties{}); err != nil {
		return fmt.Errorf("add %v: %s", l.Addr, err)
	}
	routes := []tcpip.Route{{Destination: pa.AddressWithPrefix.Subnet(), NIC: id, MTU: mtu}}
	if l.Router.IsValid() {
		routes = append(routes, tcpip.Route{Destination: anySubnet(l.Router), Gateway: addrOf(l.Router), NIC: id, MTU: mtu})
	}
	for _, r := range l.Routes {
		sub, err := tcpip.NewSubnet(addrOf(r.Dest.Masked().Addr()), prefixMask(r.Dest.Bits()))
		if err != nil {
			return fmt.Errorf("route %v: %w", r.Dest, errors.New(err.Error()))
		}
		rt := tcpip.Route{Destination: sub, NIC: id, MTU: mtu}
		if !r.Gateway.IsUnspecified() {
			rt.Gateway = addrOf(r.Gateway)
		}
		routes = append(routes, rt)
	}
	for _, r := range routes {
		s.AddRoute(r)
	}
	s.SyncMulticast(id)
	s.mu.Lock()
	s.leases[i].addr, s.leases[i].routes = l.Addr, routes
	s.mu.Unlock()
	return nil
}

// unlease takes away what interface i's lease added.
func (s *Stack) unlease(i int) {
	id := NICID(i)
	s.mu.Lock()
	st := s.leases[i]
	s.leases[i].addr, s.leases[i].routes = netip.Prefix{}, nil
	s.mu.Unlock()
	if !st.addr.IsValid() {
		return
	}
	s.RemoveRoutes(func(r tcpip.Route) bool {
		for _, x := range st.routes {
			if r == x {
				return true
			}
		}
		return false
	})
	s.RemoveAddress(id, addrOf(st.addr.Addr()))
	s.SyncMulticast(id)
}

func addrOf(a netip.Addr) tcpip.Address { return tcpip.AddrFromSlice(a.AsSlice()) }

// prefixMask is the IPv4 mask of a /bits prefix.
func prefixMask(bits int) tcpip.AddressMask {
	m := make([]byte, 4)
	for b := 0; b < bits; b++ {
		m[b/8] |= 0x80 >> (b % 8)
	}
	return tcpip.MaskFromBytes(m)
}
