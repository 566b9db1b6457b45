package dhcp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

// Route is a static route from the lease (RFC 3442, option 121).
type Route struct {
	Dest    netip.Prefix
	Gateway netip.Addr // unspecified: the destination is on the link
}

// Lease is what a server granted, read from its ACK.
type Lease struct {
	Addr   netip.Prefix // the address with the subnet mask's length
	Router netip.Addr   // first router (option 3); invalid if none
	DNS    []netip.Addr // option 6
	Domain string       // option 15
	MTU    int          // option 26; 0 if none
	NTP    []netip.Addr // option 42
	// Routes are the classless static routes (option 121). When the
	// server sends them, RFC 3442 says option 3 is to be ignored: a
	// default route, if any, is among them and Router is left invalid.
	Routes []Route
	Server netip.Addr // server identifier (option 54)
	// Duration is the lease time (option 51); Renew and Rebind are T1 and
	// T2 (options 58 and 59, by default 1/2 and 7/8 of it).
	Duration, Renew, Rebind time.Duration
	// Acquired is when the request that got the lease was sent: the
	// times above count from it (RFC 2131 section 4.4.1).
	Acquired time.Time

	ack *dhcpv4.DHCPv4 // the ACK, from which renewals are built
}

func (l *Lease) String() string {
	return fmt.Sprintf("%v gw %v dns %v lease %v from %v", l.Addr, l.Router, l.DNS, l.Duration, l.Server)
}

// Text is the lease as "name value" lines, for the namespace.
func (l *Lease) Text(now time.Time) string {
	var b strings.Builder
	line := func(k string, v any) { fmt.Fprintf(&b, "%s %v\n", k, v) }
	line("addr", l.Addr)
	if l.Router.IsValid() {
		line("router", l.Router)
	}
	for _, r := range l.Routes {
		if r.Gateway.IsUnspecified() {
			line("route", r.Dest)
		} else {
			line("route", fmt.Sprintf("%v via %v", r.Dest, r.Gateway))
		}
	}
	for _, a := range l.DNS {
		line("dns", a)
	}
	if l.Domain != "" {
		line("domain", l.Domain)
	}
	if l.MTU != 0 {
		line("mtu", l.MTU)
	}
	for _, a := range l.NTP {
		line("ntp", a)
	}
	line("server", l.Server)
	line("lease", l.Duration)
	left := func(d time.Duration) time.Duration { return max(l.Acquired.Add(d).Sub(now), 0).Round(time.Second) }
	line("renew_in", left(l.Renew))
	line("rebind_in", left(l.Rebind))
	line("expires_in", left(l.Duration))
	return b.String()
}

// ErrBadAddr is wrapped by the errors for offered addresses that are not
// unicast host addresses.
var ErrBadAddr = errors.New("not a unicast host address")

// CheckAddr refuses what a host must not take as its address: 0/8,
// 127/8, link-local 169.254/16 (RFC 3927 keeps it from DHCP servers),
// multicast and the reserved 240/4 with the limited broadcast, a subnet
// mask of /0 or /32 or not contiguous, and the subnet's own network or
// broadcast address (except on a /31, RFC 3021, which has neither).
func CheckAddr(a netip.Addr, mask net.IPMask) error {
	if !a.Is4() {
		return fmt.Errorf("%v: %w (not IPv4)", a, ErrBadAddr)
	}
	b := a.As4()
	switch {
	case b[0] == 0:
		return fmt.Errorf("%v: %w (this network, 0/8)", a, ErrBadAddr)
	case b[0] == 127:
		return fmt.Errorf("%v: %w (loopback)", a, ErrBadAddr)
	case b[0] == 169 && b[1] == 254:
		return fmt.Errorf("%v: %w (link-local)", a, ErrBadAddr)
	case a.IsMulticast():
		return fmt.Errorf("%v: %w (multicast)", a, ErrBadAddr)
	case b[0] >= 240:
		return fmt.Errorf("%v: %w (broadcast or reserved, 240/4)", a, ErrBadAddr)
	}
	if mask == nil {
		return nil // an OFFER need not carry the mask; the ACK must
	}
	ones, bits := mask.Size()
	if bits != 32 {
		return fmt.Errorf("%v: subnet mask %v: %w (not contiguous)", a, net.IP(mask), ErrBadAddr)
	}
	if ones == 0 || ones == 32 {
		return fmt.Errorf("%v/%d: %w (mask /%d)", a, ones, ErrBadAddr, ones)
	}
	if ones == 31 {
		return nil
	}
	p := netip.PrefixFrom(a, ones).Masked()
	if a == p.Addr() {
		return fmt.Errorf("%v/%d: %w (the subnet's network address)", a, ones, ErrBadAddr)
	}
	host := ^uint32(0) >> ones
	if u := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]); u&host == host {
		return fmt.Errorf("%v/%d: %w (the subnet's broadcast address)", a, ones, ErrBadAddr)
	}
	return nil
}

// checkOffer is what an OFFER must be to be requested.
func checkOffer(m *dhcpv4.DHCPv4) error {
	a, ok := addrOf(m.YourIPAddr)
	if !ok {
		return fmt.Errorf("OFFER: yiaddr %v is not an IPv4 address", m.YourIPAddr)
	}
	var mask net.IPMask
	if m.Options.Has(dhcpv4.OptionSubnetMask) {
		if mask = m.SubnetMask(); mask == nil {
			return fmt.Errorf("OFFER of %v: malformed subnet mask", a)
		}
	}
	if err := CheckAddr(a, mask); err != nil {
		return fmt.Errorf("OFFER: %w", err)
	}
	if _, ok := addrOf(m.ServerIdentifier()); !ok {
		return fmt.Errorf("OFFER of %v without server identifier (option 54)", a)
	}
	return nil
}

// The bounds a lease's times are held to: a zero lease is refused, and
// T1 and T2 outside 0 < T1 < T2 < lease take the defaults of RFC 2131.
const minLease = time.Second

// leaseFrom reads the lease out of an ACK for addr (the address asked
// for, invalid to take the ACK's) from server (invalid to take the ACK's
// identifier). A lease this host must not take is an error.
func leaseFrom(ack *dhcpv4.DHCPv4, addr, server netip.Addr, sent time.Time) (*Lease, error) {
	if ack.MessageType() != dhcpv4.MessageTypeAck {
		return nil, fmt.Errorf("%v, want ACK", ack.MessageType())
	}
	y, ok := addrOf(ack.YourIPAddr)
	if !ok {
		return nil, fmt.Errorf("ACK: yiaddr %v is not an IPv4 address", ack.YourIPAddr)
	}
	if addr.IsValid() && y != addr {
		return nil, fmt.Errorf("ACK for %v, we asked for %v", y, addr)
	}
	if id, ok := addrOf(ack.ServerIdentifier()); ok {
		if server.IsValid() && id != server {
			return nil, fmt.Errorf("ACK from server %v, we asked %v", id, server)
		}
		server = id
	}
	if !server.IsValid() {
		return nil, fmt.Errorf("ACK for %v without server identifier (option 54)", y)
	}
	mask := ack.SubnetMask()
	if mask == nil {
		return nil, fmt.Errorf("ACK for %v from %v has no subnet mask (option 1)", y, server)
	}
	if err := CheckAddr(y, mask); err != nil {
		return nil, fmt.Errorf("ACK from %v: %w", server, err)
	}
	ones, _ := mask.Size()
	d := ack.IPAddressLeaseTime(0)
	if d < minLease {
		return nil, fmt.Errorf("ACK for %v from %v: lease time %v", y, server, d)
	}
	l := &Lease{
		Addr:     netip.PrefixFrom(y, ones),
		DNS:      addrsOf(ack.DNS()),
		Domain:   ack.DomainName(),
		NTP:      addrsOf(ack.NTPServers()),
		Server:   server,
		Duration: d,
		Acquired: sent,
		ack:      ack,
	}
	l.Renew = ack.IPAddressRenewalTime(0)
	l.Rebind = ack.IPAddressRebindingTime(0)
	if l.Rebind <= 0 || l.Rebind >= d {
		l.Rebind = d / 8 * 7
	}
	if l.Renew <= 0 || l.Renew >= l.Rebind {
		l.Renew = min(d/2, l.Rebind)
	}
	if v := ack.Options.Get(dhcpv4.OptionInterfaceMTU); len(v) == 2 {
		// RFC 2132 section 5.1: 68 is the least an IPv4 link carries;
		// below the 576 every host must accept it is not worth taking.
		if mtu := int(v[0])<<8 | int(v[1]); mtu >= 576 {
			l.MTU = mtu
		}
	}
	if ack.Options.Has(dhcpv4.OptionClasslessStaticRoute) {
		for _, r := range ack.ClasslessStaticRoute() {
			dst, ok1 := addrOf(r.Dest.IP)
			gw, ok2 := addrOf(r.Router)
			ones, bits := r.Dest.Mask.Size()
			if !ok1 || !ok2 || bits != 32 || (!gw.IsUnspecified() && CheckAddr(gw, nil) != nil) {
				continue // a route through a non-host address is left out
			}
			l.Routes = append(l.Routes, Route{Dest: netip.PrefixFrom(dst, ones).Masked(), Gateway: gw})
		}
	} else {
		for _, r := range addrsOf(ack.Router()) {
			if CheckAddr(r, nil) == nil {
				l.Router = r
				break
			}
		}
	}
	return l, nil
}

func addrOf(ip net.IP) (netip.Addr, bool) {
	v4 := ip.To4()
	if v4 == nil {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte(v4)), true
}

func addrsOf(ips []net.IP) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if a, ok := addrOf(ip); ok && !a.IsUnspecified() {
			out = append(out, a)
		}
	}
	return out
}
