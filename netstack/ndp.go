package netstack

import (
	"context"
	"net/netip"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// IPv6 on a LAN: every NIC gets its link-local address (from the MAC),
// sends router solicitations, and takes from router advertisements the
// default routers, on-link prefixes and a SLAAC address per autonomous
// prefix (RFC 4861, 4862), and DNS servers (RFC 8106). gVisor does the
// protocol; its dispatcher may not call into the stack, so the routes,
// the multicast filter and the log lines it asks for are queued and done
// on a goroutine of the stack's own.

// ndpOptions configure gVisor's IPv6 for hosts on a LAN.
func ndpOptions(d ipv6.NDPDispatcher) ipv6.Options {
	cfg := ipv6.DefaultNDPConfigurations()
	cfg.HandleRAs = ipv6.HandlingRAsEnabledWhenForwardingDisabled
	cfg.DiscoverDefaultRouters = true
	cfg.DiscoverOnLinkPrefixes = true
	cfg.AutoGenGlobalAddresses = true
	return ipv6.Options{NDPConfigs: cfg, AutoGenLinkLocal: true, NDPDisp: d}
}

// ndpDispatcher queues gVisor's NDP events for the stack's goroutine.
type ndpDispatcher struct {
	work    chan func()
	dropped atomic.Uint64 // events lost to a full queue
	dns     atomic.Pointer[[]netip.Addr]
}

func newNDPDispatcher() *ndpDispatcher { return &ndpDispatcher{work: make(chan func(), 256)} }

func (d *ndpDispatcher) queue(f func()) {
	select {
	case d.work <- f:
	default:
		d.dropped.Add(1)
	}
}

// run does the queued work until ctx ends.
func (d *ndpDispatcher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-d.work:
			f()
		}
	}
}

// ndpHandler is gVisor's dispatcher: it queues work that uses s.
type ndpHandler struct {
	*ndpDispatcher
	s *Stack
}

func (h ndpHandler) name(id tcpip.NICID) string {
	if i := int(id) - 1; i >= 0 && i < len(h.s.Endpoints) {
		return h.s.Endpoints[i].NIC().Name()
	}
	return "nic"
}

func (h ndpHandler) OnDuplicateAddressDetectionResult(id tcpip.NICID, a tcpip.Address, r stack.DADResult) {
	if _, ok := r.(*stack.DADSucceeded); !ok {
		h.queue(func() { h.s.logf("%s: ipv6 %v: duplicate address detection: %T", h.name(id), a, r) })
	}
}

func (h ndpHandler) OnOffLinkRouteUpdated(id tcpip.NICID, sub tcpip.Subnet, router tcpip.Address, _ header.NDPRoutePreference) {
	h.queue(func() {
		r := tcpip.Route{Destination: sub, Gateway: router, NIC: id}
		h.s.RemoveRoutes(func(x tcpip.Route) bool { return x == r })
		h.s.AddRoute(r)
		h.s.logf("%s: ipv6 route %v via %v", h.name(id), sub, router)
	})
}

func (h ndpHandler) OnOffLinkRouteInvalidated(id tcpip.NICID, sub tcpip.Subnet, router tcpip.Address) {
	h.queue(func() {
		r := tcpip.Route{Destination: sub, Gateway: router, NIC: id}
		h.s.RemoveRoutes(func(x tcpip.Route) bool { return x == r })
		h.s.logf("%s: ipv6 route %v via %v gone", h.name(id), sub, router)
	})
}

func (h ndpHandler) OnOnLinkPrefixDiscovered(id tcpip.NICID, sub tcpip.Subnet) {
	h.queue(func() {
		r := tcpip.Route{Destination: sub, NIC: id}
		h.s.RemoveRoutes(func(x tcpip.Route) bool { return x == r })
		h.s.AddRoute(r)
	})
}

func (h ndpHandler) OnOnLinkPrefixInvalidated(id tcpip.NICID, sub tcpip.Subnet) {
	h.queue(func() {
		r := tcpip.Route{Destination: sub, NIC: id}
		h.s.RemoveRoutes(func(x tcpip.Route) bool { return x == r })
	})
}

func (h ndpHandler) OnAutoGenAddress(id tcpip.NICID, a tcpip.AddressWithPrefix) stack.AddressDispatcher {
	h.queue(func() {
		h.s.SyncMulticast(id)
		kind := "slaac"
		if header.IsV6LinkLocalUnicastAddress(a.Address) {
			kind = "ipv6 link-local"
		}
		h.s.logf("%s: %s %v", h.name(id), kind, a)
	})
	return nil
}

func (h ndpHandler) OnAutoGenAddressDeprecated(tcpip.NICID, tcpip.AddressWithPrefix) {}

func (h ndpHandler) OnAutoGenAddressInvalidated(id tcpip.NICID, a tcpip.AddressWithPrefix) {
	h.queue(func() {
		h.s.SyncMulticast(id)
		h.s.logf("%s: slaac %v gone", h.name(id), a)
	})
}

func (h ndpHandler) OnRecursiveDNSServerOption(_ tcpip.NICID, addrs []tcpip.Address, life time.Duration) {
	var out []netip.Addr
	if life > 0 {
		for _, a := range addrs {
			if x, ok := netip.AddrFromSlice(a.AsSlice()); ok {
				out = append(out, x)
			}
		}
	}
	h.dns.Store(&out)
}

func (h ndpHandler) OnDNSSearchListOption(tcpip.NICID, []string, time.Duration) {}

// ndpDNS are the DNS servers router advertisements named last.
func (d *ndpDispatcher) ndpDNS() []netip.Addr {
	if p := d.dns.Load(); p != nil {
		return *p
	}
	return nil
}

// OnDHCPv6Configuration: stateful DHCPv6 is not run; SLAAC and RDNSS
// carry the configuration.
func (h ndpHandler) OnDHCPv6Configuration(tcpip.NICID, ipv6.DHCPv6ConfigurationFromNDPRA) {}
