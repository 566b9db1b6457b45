package system

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/ether9/ether9/boot/init/status"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/bind"
	"github.com/ether9/ether9/ns/ninep"
	"github.com/ether9/ether9/ns/shell"
)

// kmesgLines is how many console lines /dev/kmesg keeps.
const kmesgLines = 2000

// buildNamespace registers every component's files. A file that cannot
// be registered is reported; the rest of the tree still serves.
func (s *System) buildNamespace() {
	n := ns.New()
	report := func(err error) {
		if err != nil {
			s.logf("ns: %v", err)
		}
	}
	report(bind.Sys(n, s.kmesg, s.Uptime))
	report(n.Add("/dev/time", ns.Text(s.timeText)))
	report(n.Add("/dev/admin/refused", ns.Text(s.guard.Stats)))
	if s.plat.KernelStats != nil {
		report(n.Add("/dev/kstat", ns.ReadFunc(s.plat.KernelStats)))
	}
	report(bind.PCI(n, s.funcs))
	for i, p := range s.ports {
		var l bind.Link // a bare driver without the stack
		if ep := s.endpoint(i); ep != nil {
			l = ep
		}
		report(bind.NIC(n, p.NIC, l))
	}
	if rs := s.remaps(); len(rs) > 0 {
		report(bind.IOMMU(n, rs, s.domains))
	}
	if s.stack != nil {
		report(bind.Stack(n, s.stack.Stack))
		for i := range s.stack.Endpoints {
			if c := s.stack.DHCP(i); c != nil {
				report(n.Add(fmt.Sprintf("/net/ipifc/%d/dhcp", i), ns.Text(c.Text)))
			}
		}
	}
	s.ns = n
}

// endpoint is the link endpoint over port i, nil without the stack.
func (s *System) endpoint(i int) *netstack.Endpoint {
	if s.stack == nil || i >= len(s.stack.Endpoints) {
		return nil
	}
	return s.stack.Endpoints[i]
}

func (s *System) domains() []bind.Domain {
	var out []bind.Domain
	for _, p := range s.ports {
		if p.Domain != nil {
			out = append(out, bind.Domain{Source: p.Domain.Source(), ID: p.Domain.ID(), Name: p.NIC.Name(), Unit: p.IOMMU})
		}
	}
	return out
}

// Namespace is the system's file tree.
func (s *System) Namespace() *ns.Namespace { return s.ns }

// Shell is a console shell over the namespace whose ping uses the stack.
func (s *System) Shell() *shell.Shell {
	return &shell.Shell{NS: s.ns, Ping: func(ctx context.Context, host string) (time.Duration, error) {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return 0, fmt.Errorf("want an IPv4 address: %w", err)
		}
		if s.stack == nil {
			return 0, fmt.Errorf("no network stack: %v", s.down)
		}
		return Ping(ctx, s.stack.Stack, a, time.Second)
	}}
}

// ninePConns bounds the 9P server's connections: a mount holds one.
const ninePConns = 32

// serve9P serves the namespace over 9P2000.L on TCP 564 of the stack,
// writable only with ether9.9p=rw and to a client attached with the token.
func (s *System) serve9P(ctx context.Context) error {
	ln, err := gonet.ListenTCP(s.stack.Stack, tcpip.FullAddress{Port: ninep.Port}, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("listen :%d: %w", ninep.Port, err)
	}
	defer ln.Close()
	// Bounded as the status server is: a flood of 9P clients waits in
	// the backlog instead of costing a goroutine each.
	lim := newLimitListener(ln, ninePConns)
	s.ns.Remove("/net/9p/stats") // a restarted server's
	if err := s.ns.Add("/net/9p/stats", ns.Text(lim.Stats)); err != nil {
		s.logf("9p: %v", err)
	}
	rw := s.opt.NineP == "rw"
	mode := "read-only"
	if rw {
		mode = "read-write"
	}
	s.logf("9p: listening :%d %s", ninep.Port, mode)
	if err := ninep.New(s.ns, rw, s.guard).Serve(ctx, lim); err != nil && ctx.Err() == nil {
		return fmt.Errorf("9p: %w", err)
	}
	return nil
}

// nicOf names the NIC that holds address a, "" when none does.
func (s *System) nicOf(a netip.Addr) string {
	if s.stack == nil {
		return ""
	}
	for id, addrs := range s.stack.Stack.AllAddresses() {
		i := int(id) - 1 // netstack.NICID
		if i < 0 || i >= len(s.ports) {
			continue
		}
		for _, pa := range addrs {
			if b, ok := netip.AddrFromSlice(pa.AddressWithPrefix.Address.AsSlice()); ok && b.Unmap() == a.Unmap() {
				return s.ports[i].NIC.Name()
			}
		}
	}
	return ""
}

// nsCounters reads the numeric "name<sep>value" lines of a namespace file;
// lines whose value is not a number (a mode) are left out.
func (s *System) nsCounters(p, sep string) []status.Counter {
	if s.ns == nil {
		return nil
	}
	text, err := s.ns.ReadFile(p)
	if err != nil {
		return nil
	}
	var out []status.Counter
	for _, l := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(l, sep)
		if !ok {
			continue
		}
		x, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, status.Counter{Name: k, Value: x})
	}
	return out
}
