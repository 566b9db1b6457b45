package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ether9/ether9/ns/admin"
)

// config is what the runner puts on the kernel command line for the
// reference boot:
//
//	ref.modules=dca,i2c-algo-bit,igb   the modules under /lib/modules, in load order
//	ref.ip=10.0.2.15/24                the NIC's address
//	ref.gw=10.0.2.2                    the default route's gateway, pinged by /debug/ping
//	ether9.token=TOKEN                 what /source, /sink and /debug/ping need, as ether9's
//
// Every other word is the kernel's.
type config struct {
	modules []string
	addr    netip.Prefix
	gw      netip.Addr
	token   admin.Token // not valid when the line has none
}

// Defaults are QEMU user networking's: the guest at .15, the gateway at .2.
var (
	defaultAddr = netip.MustParsePrefix("10.0.2.15/24")
	defaultGW   = netip.MustParseAddr("10.0.2.2")
)

// parseCmdline reads a kernel command line. A word of ours with a bad
// value is an error naming it; nothing is half applied.
func parseCmdline(line string) (config, error) {
	c := config{addr: defaultAddr, gw: defaultGW}
	for _, w := range strings.Fields(line) {
		key, val, _ := strings.Cut(w, "=")
		switch key {
		case "ref.modules":
			c.modules = nil
			for _, m := range strings.Split(val, ",") {
				if m == "" {
					continue
				}
				if strings.ContainsAny(m, "/.") {
					return config{}, fmt.Errorf("cmdline: %s: module %q: want a bare name", w, m)
				}
				c.modules = append(c.modules, m)
			}
		case "ref.ip":
			p, err := netip.ParsePrefix(val)
			if err != nil || !p.Addr().Is4() {
				return config{}, fmt.Errorf("cmdline: %s: want an IPv4 address/length", w)
			}
			c.addr = p
		case "ref.gw":
			a, err := netip.ParseAddr(val)
			if err != nil || !a.Is4() {
				return config{}, fmt.Errorf("cmdline: %s: want an IPv4 address", w)
			}
			c.gw = a
		case "ether9.token":
			t, err := admin.ParseToken(val)
			if err != nil {
				return config{}, fmt.Errorf("cmdline: ether9.token: %w", err)
			}
			c.token = t
		}
	}
	if !c.addr.Contains(c.gw) {
		return config{}, fmt.Errorf("cmdline: gateway %v is not on %v", c.gw, c.addr.Masked())
	}
	return c, nil
}
