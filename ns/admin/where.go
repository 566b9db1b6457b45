package admin

import (
	"fmt"
	"net/netip"
	"strings"
)

// Where is the ether9.admin= list: the interfaces ("ether0") whose
// addresses a control request may arrive at, and the prefixes
// ("192.168.1.0/24", "fd00::/8") it may come from. The zero Where admits
// every request (the token still decides).
type Where struct {
	NICs     []string
	Prefixes []netip.Prefix
}

// ParseWhere reads a comma-separated list of interface names and
// prefixes (a bare address is its own /32 or /128).
func ParseWhere(s string) (Where, error) {
	var w Where
	if s == "" {
		return w, fmt.Errorf("admin: empty list: want interfaces (ether0) or prefixes (10.0.0.0/8), comma-separated")
	}
	for _, e := range strings.Split(s, ",") {
		switch {
		case e == "":
			return Where{}, fmt.Errorf("admin: empty element in %q", s)
		case strings.HasPrefix(e, "ether"):
			n := e[len("ether"):]
			if n == "" || len(n) > 3 || strings.Trim(n, "0123456789") != "" {
				return Where{}, fmt.Errorf("admin: %q: want etherN", e)
			}
			w.NICs = append(w.NICs, e)
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return Where{}, fmt.Errorf("admin: %q: %w", e, err)
			}
			w.Prefixes = append(w.Prefixes, p.Masked())
		default:
			a, err := netip.ParseAddr(e)
			if err != nil {
				return Where{}, fmt.Errorf("admin: %q: want an interface, an address or a prefix", e)
			}
			w.Prefixes = append(w.Prefixes, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return w, nil
}

// Any says whether w admits every request.
func (w Where) Any() bool { return len(w.NICs) == 0 && len(w.Prefixes) == 0 }

// Admits says whether a request from remote that arrived on the
// interface named nic ("" when not known) may reach control.
func (w Where) Admits(nic string, remote netip.Addr) bool {
	if w.Any() {
		return true
	}
	remote = remote.Unmap()
	for _, p := range w.Prefixes {
		if p.Contains(remote) {
			return true
		}
	}
	for _, n := range w.NICs {
		if n == nic && nic != "" {
			return true
		}
	}
	return false
}

// String is the list as ether9.admin= takes it.
func (w Where) String() string {
	var e []string
	e = append(e, w.NICs...)
	for _, p := range w.Prefixes {
		e = append(e, p.String())
	}
	return strings.Join(e, ",")
}
