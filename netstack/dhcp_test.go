package netstack_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/netstack/dhcp"
	"github.com/ether9/ether9/netstack/dhcp/dhcptest"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

var (
	serverIP = netip.MustParseAddr("192.0.2.1")
	leaseIP  = netip.MustParsePrefix("192.0.2.50/24")
	dns1     = netip.MustParseAddr("192.0.2.53")
	ntp1     = netip.MustParseAddr("192.0.2.123")
)

// quickDHCP keeps every wait of the client short: nothing in these tests
// waits a real minute.
var quickDHCP = dhcp.Config{Retransmit: 50 * time.Millisecond, Sends: 2, Backoff: 20 * time.Millisecond, BackoffMax: 80 * time.Millisecond, MinRetry: 50 * time.Millisecond}

// dhcpPair is a server stack with a static address running the test
// server, and a bare client NIC wired to it.
func dhcpPair(t *testing.T) (client *fakeNIC, server *netstack.Stack, srv *dhcptest.Server) {
	t.Helper()
	a, b := newFakeNIC("ether0", 1), newFakeNIC("ether0", 2)
	crossWire(a, b)
	server, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: b, Addrs: []netip.Prefix{netip.PrefixFrom(serverIP, 24)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	srv, err = dhcptest.Start(server.Stack, netstack.NICID(0), serverIP, leaseIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.DNS, srv.NTP, srv.Domain = []netip.Addr{dns1, netip.MustParseAddr("192.0.2.54")}, []netip.Addr{ntp1}, "example.test"
	return a, server, srv
}

// dhcpClient is a stack leasing its address on nic.
func dhcpClient(t *testing.T, n *fakeNIC, static ...netip.Prefix) (*netstack.Stack, *logLines) {
	t.Helper()
	logs := &logLines{}
	cs, err := netstack.NewStack(netstack.StackOptions{DHCP: quickDHCP, Logf: logs.add},
		netstack.Interface{NIC: n, DHCP: true, Addrs: static, Endpoint: netstack.Options{LinkCheck: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	return cs, logs
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(f string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(f, args...))
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func waitLease(t *testing.T, cs *netstack.Stack, what string) *dhcp.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := cs.WaitLease(ctx, 0)
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, cs.DHCP(0).Text())
	}
	return l
}

// v4Addrs are the IPv4 addresses NIC 0 of s holds.
func v4Addrs(s *netstack.Stack) []netip.Addr {
	var out []netip.Addr
	for _, pa := range s.NICInfo()[netstack.NICID(0)].ProtocolAddresses {
		if pa.Protocol == ipv4.ProtocolNumber {
			a, _ := netip.AddrFromSlice(pa.AddressWithPrefix.Address.AsSlice())
			out = append(out, a)
		}
	}
	return out
}

func TestDHCPLease(t *testing.T) {
	a, server, _ := dhcpPair(t)
	cs, logs := dhcpClient(t, a)
	l := waitLease(t, cs, "a lease")
	if l.Addr != leaseIP || l.Router != serverIP || l.Server != serverIP || l.Duration != time.Hour || l.Renew != 30*time.Minute || l.Rebind != 3150*time.Second {
		t.Errorf("lease %v renew %v rebind %v", l, l.Renew, l.Rebind)
	}
	if len(l.DNS) != 2 || l.DNS[0] != dns1 || len(cs.DNS()) != 2 || len(l.NTP) != 1 || l.NTP[0] != ntp1 || l.Domain != "example.test" {
		t.Errorf("DNS %v (stack %v) NTP %v domain %q", l.DNS, cs.DNS(), l.NTP, l.Domain)
	}
	// The address, the subnet route and the default route are in place:
	// the server answers, and an off-link address routes via the router.
	if err := ping(t, cs, serverIP); err != nil {
		t.Fatalf("ping the server from the leased address: %v", err)
	}
	udpEcho(t, cs, server, leaseIP.Addr(), serverIP, 100)
	r, terr := cs.FindRoute(0, tcpip.Address{}, tcpip.AddrFromSlice([]byte{198, 51, 100, 7}), ipv4.ProtocolNumber, false)
	if terr != nil {
		t.Fatalf("no default route: %s", terr)
	}
	if gw := r.NextHop(); gw != tcpip.AddrFromSlice(serverIP.AsSlice()) {
		t.Errorf("off-link next hop %v, want the router %v", gw, serverIP)
	}
	r.Release()
	// The temporary 0.0.0.0 is gone again.
	if got := v4Addrs(cs); len(got) != 1 || got[0] != leaseIP.Addr() {
		t.Errorf("addresses %v, want only the lease's", got)
	}
	text := cs.DHCP(0).Text()
	for _, w := range []string{"state bound", "addr 192.0.2.50/24", "ntp 192.0.2.123", "domain example.test", "acks 1"} {
		if !strings.Contains(text, w) {
			t.Errorf("status lacks %q:\n%s", w, text)
		}
	}
	if !strings.Contains(logs.String(), "ether0: dhcp 192.0.2.50/24 gw 192.0.2.1") {
		t.Errorf("log:\n%s", logs)
	}
}

// hostile are offers no host may take, each with the reason it is bad.
var hostile = []netip.Prefix{
	netip.MustParsePrefix("224.0.0.1/24"),       // multicast
	netip.MustParsePrefix("255.255.255.255/24"), // limited broadcast
	netip.MustParsePrefix("192.0.2.255/24"),     // the subnet's broadcast
	netip.MustParsePrefix("192.0.2.0/24"),       // the subnet's network
	netip.MustParsePrefix("192.0.2.60/32"),      // a mask of /32
	netip.MustParsePrefix("192.0.2.61/0"),       // a mask of /0
	netip.MustParsePrefix("127.0.0.1/8"),        // loopback
	netip.MustParsePrefix("0.1.2.3/8"),          // this network
}

// A server that is silent, then NAKs, then offers addresses no host may
// take, and at last offers well: the client keeps asking through all of
// it, never holds a bad address, and ends with the good lease.
func TestDHCPNeverGivesUp(t *testing.T) {
	a, _, srv := dhcpPair(t)
	const silent, naks = 5, 3
	var mu sync.Mutex
	var held []netip.Addr // every address the client held when the server heard it
	var cs *netstack.Stack
	srv.SetPolicy(func(req *dhcpv4.DHCPv4, c dhcptest.Counts) dhcptest.Reply {
		mu.Lock()
		if cs != nil {
			held = append(held, v4Addrs(cs)...)
		}
		mu.Unlock()
		switch {
		case c.Discovers <= silent:
			return dhcptest.Reply{}
		case req.MessageType() == dhcpv4.MessageTypeDiscover && c.Discovers <= silent+naks:
			return dhcptest.Reply{Type: dhcpv4.MessageTypeOffer}
		case req.MessageType() == dhcpv4.MessageTypeRequest && c.Discovers <= silent+naks:
			return dhcptest.Reply{Type: dhcpv4.MessageTypeNak}
		case req.MessageType() == dhcpv4.MessageTypeDiscover && c.Discovers <= silent+naks+len(hostile):
			return dhcptest.Reply{Type: dhcpv4.MessageTypeOffer, Addr: hostile[c.Discovers-silent-naks-1]}
		}
		return dhcptest.Answer(req, c)
	})
	mu.Lock()
	cs, _ = dhcpClient(t, a)
	mu.Unlock()
	l := waitLease(t, cs, "the good lease after silence, NAKs and hostile offers")
	if l.Addr != leaseIP {
		t.Fatalf("lease %v", l)
	}
	st := cs.DHCP(0).Stats()
	// A late reply shifts the server's phases (they count DISCOVERs), so
	// the NAKs are at least one, not exactly the plan's.
	if st.Naks == 0 || st.Naks > naks || st.OffersRefused < uint64(len(hostile)) || st.Failures < uint64(silent/quickDHCP.Sends) {
		t.Errorf("stats %+v: want 1..%d NAKs, >= %d offers refused", st, naks, len(hostile))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range held {
		if h != leaseIP.Addr() && !h.IsUnspecified() {
			t.Errorf("the client held %v", h)
		}
	}
	if !strings.Contains(cs.DHCP(0).Text(), "last_refused") {
		t.Errorf("no refusal recorded:\n%s", cs.DHCP(0).Text())
	}
}

// The lease is renewed at T1 by unicast; when the server ignores
// renewals it is rebound at T2 by broadcast; a NAK takes the address
// away and the client starts over.
func TestDHCPRenewRebind(t *testing.T) {
	a, _, srv := dhcpPair(t)
	srv.LeaseTime, srv.Renew, srv.Rebind = 4, 1, 2
	cs, _ := dhcpClient(t, a)
	waitLease(t, cs, "a lease")
	eventually(t, "a renewal", func() bool { return srv.Counts().Extends > 0 && cs.DHCP(0).Stats().Acks > 1 })
	if st := cs.DHCP(0).Stats(); st.Rebinds != 0 || st.Discovers != 1 {
		t.Errorf("answered renewals: stats %+v", st)
	}
	if err := ping(t, cs, serverIP); err != nil {
		t.Errorf("renewed address unusable: %v", err)
	}

	// Extensions go unanswered until the client rebinds; the rebind is
	// answered.
	srv.SetPolicy(func(req *dhcpv4.DHCPv4, c dhcptest.Counts) dhcptest.Reply {
		if !req.ClientIPAddr.IsUnspecified() && cs.DHCP(0).Stats().Rebinds == 0 {
			return dhcptest.Reply{}
		}
		return dhcptest.Answer(req, c)
	})
	acks := cs.DHCP(0).Stats().Acks
	eventually(t, "a rebind", func() bool { return cs.DHCP(0).Stats().Rebinds > 0 })
	eventually(t, "the rebind's ACK", func() bool { return cs.DHCP(0).Stats().Acks > acks && cs.Lease(0) != nil })
	if got := v4Addrs(cs); len(got) != 1 || got[0] != leaseIP.Addr() {
		t.Errorf("addresses after rebinding %v", got)
	}

	// Every extension is refused: the address goes, and comes back
	// through DISCOVER.
	var once sync.Once
	lost := make(chan struct{})
	srv.SetPolicy(func(req *dhcpv4.DHCPv4, c dhcptest.Counts) dhcptest.Reply {
		if !req.ClientIPAddr.IsUnspecified() {
			once.Do(func() { close(lost) })
			return dhcptest.Reply{Type: dhcpv4.MessageTypeNak}
		}
		return dhcptest.Answer(req, c)
	})
	<-lost
	eventually(t, "a NAK", func() bool { return cs.DHCP(0).Stats().Naks > 0 })
	eventually(t, "a new lease", func() bool { return cs.DHCP(0).Stats().Discovers > 1 && cs.Lease(0) != nil })
}

// A lease nobody extends runs out: the address goes.
func TestDHCPExpiry(t *testing.T) {
	a, _, srv := dhcpPair(t)
	srv.LeaseTime, srv.Renew, srv.Rebind = 2, 1, 1
	cs, logs := dhcpClient(t, a)
	waitLease(t, cs, "a lease")
	srv.SetPolicy(dhcptest.Silent)
	eventually(t, "the lease to end", func() bool { return cs.DHCP(0).Stats().Expired > 0 })
	eventually(t, "the address to go", func() bool { return len(v4Addrs(cs)) == 0 || v4Addrs(cs)[0].IsUnspecified() })
	if !strings.Contains(logs.String(), "lease expired") {
		t.Errorf("log:\n%s", logs)
	}
}

// A link that goes down and up keeps the address, and the lease is
// checked at once (INIT-REBOOT).
func TestDHCPLinkFlap(t *testing.T) {
	a, _, srv := dhcpPair(t)
	cs, _ := dhcpClient(t, a)
	waitLease(t, cs, "a lease")
	a.setLink(nic.Link{})
	eventually(t, "the link down", func() bool { return !cs.Endpoints[0].Link().Up })
	if got := v4Addrs(cs); len(got) != 1 || got[0] != leaseIP.Addr() || cs.Lease(0) == nil {
		t.Errorf("link down: addresses %v lease %v", got, cs.Lease(0))
	}
	a.setLink(nic.Link{Up: true, SpeedMbps: 1000, FullDuplex: true})
	eventually(t, "the reboot's ACK", func() bool { return srv.Counts().Reboots > 0 && cs.DHCP(0).Stats().Acks > 1 })
	if cs.Lease(0) == nil || cs.Lease(0).Addr != leaseIP {
		t.Errorf("lease after the flap %v", cs.Lease(0))
	}
}

// Without a lease the static address serves; a lease that comes later
// takes its place.
func TestDHCPFallback(t *testing.T) {
	a, server, srv := dhcpPair(t)
	srv.SetPolicy(dhcptest.Silent)
	static := netip.MustParsePrefix("192.0.2.77/24")
	cs, _ := dhcpClient(t, a, static)
	eventually(t, "the static address", func() bool {
		for _, x := range v4Addrs(cs) {
			if x == static.Addr() {
				return true
			}
		}
		return false
	})
	if err := ping(t, server, static.Addr()); err != nil {
		t.Errorf("static fallback address unreachable: %v", err)
	}
	srv.SetPolicy(dhcptest.Answer)
	waitLease(t, cs, "a lease after the fallback")
	if got := v4Addrs(cs); len(got) != 1 || got[0] != leaseIP.Addr() {
		t.Errorf("addresses %v, want the lease's alone", got)
	}
}

// Classless static routes (option 121) are installed in place of option
// 3's router (RFC 3442), and a lease MTU below the link's is on them.
func TestDHCPStaticRoutesAndMTU(t *testing.T) {
	a, _, srv := dhcpPair(t)
	gw := netip.MustParseAddr("192.0.2.254")
	srv.SetPolicy(func(req *dhcpv4.DHCPv4, c dhcptest.Counts) dhcptest.Reply {
		r := dhcptest.Answer(req, c)
		r.Change = func(m *dhcpv4.DHCPv4) {
			m.UpdateOption(dhcpv4.OptClasslessStaticRoute(
				&dhcpv4.Route{Dest: &net.IPNet{IP: net.IPv4(198, 51, 100, 0).To4(), Mask: net.CIDRMask(24, 32)}, Router: gw.AsSlice()},
				&dhcpv4.Route{Dest: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}, Router: serverIP.AsSlice()},
				&dhcpv4.Route{Dest: &net.IPNet{IP: net.IPv4(203, 0, 113, 0).To4(), Mask: net.CIDRMask(24, 32)}, Router: net.IPv4(224, 0, 0, 1).To4()},
			))
			m.UpdateOption(dhcpv4.OptGeneric(dhcpv4.OptionInterfaceMTU, []byte{0x05, 0x78})) // 1400
		}
		return r
	})
	cs, _ := dhcpClient(t, a)
	l := waitLease(t, cs, "a lease with routes")
	if l.Router.IsValid() || len(l.Routes) != 2 || l.MTU != 1400 {
		t.Fatalf("lease router %v routes %v mtu %d: want no router, two routes (the multicast gateway left out), mtu 1400", l.Router, l.Routes, l.MTU)
	}
	for dst, want := range map[string]netip.Addr{"198.51.100.7": gw, "192.0.2.99": {}, "8.8.8.8": serverIP} {
		r, terr := cs.FindRoute(0, tcpip.Address{}, tcpip.AddrFromSlice(netip.MustParseAddr(dst).AsSlice()), ipv4.ProtocolNumber, false)
		if terr != nil {
			t.Fatalf("no route to %s: %s", dst, terr)
		}
		hop := r.NextHop()
		r.Release()
		if want.IsValid() && hop != tcpip.AddrFromSlice(want.AsSlice()) || !want.IsValid() && hop.Len() != 0 {
			t.Errorf("to %s via %v, want %v", dst, hop, want)
		}
	}
	for _, r := range cs.GetRouteTable() {
		if r.MTU != 1400 {
			t.Errorf("route %v MTU %d, want the lease's 1400", r, r.MTU)
		}
	}
}
