package system

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ether9/ether9/netstack/dhcp"
	"github.com/ether9/ether9/ns/admin"
)

// Options are the ether9.* parameters of the kernel command line.
type Options struct {
	IP       netip.Prefix // ether9.ip=10.0.2.15/24: static address, DHCP fallback
	Gateway  netip.Addr   // ether9.gw=10.0.2.2
	DHCP     bool         // ether9.dhcp=off turns DHCP off (on by default)
	IOMMU    string       // ether9.iommu=strict|deferred|off (default strict)
	HTTPPort int          // ether9.http=80
	Selftest bool         // ether9.selftest: the host is running the self-test
	NineP    string       // ether9.9p=rw|ro: serve the namespace over 9P
	Ping     bool         // ether9.ping=off: do not ping the gateway at start
	IRQ      bool         // ether9.irq=off: every NIC polls, interrupt or not
	MSIX     bool         // ether9.msix=off: one interrupt a NIC, even where MSI-X vectors are
	// ether9.intremap=off: no VT-d interrupt remapping even where the
	// platform could have it, the way out should a board's firmware
	// describe its I/O APICs wrongly and a line go dead.
	IntRemap bool
	// ether9.spin=200us: how long a NIC on its interrupt keeps polling
	// after its last frame before it sleeps (0: it sleeps at once);
	// at most maxSpin.
	Spin time.Duration
	// ether9.queues=2: the queue pairs each multi-queue NIC brings up,
	// at most maxQueuePairs; 0: one per CPU (queuePairs).
	Queues int
	// ether9.token=SECRET: what control over the network needs; empty:
	// one is drawn at boot and printed on the serial console.
	Token admin.Token
	// ether9.admin=ether0,192.168.1.0/24: where control may come from
	// (interfaces it arrives on, prefixes it comes from); empty: anywhere.
	Admin admin.Where
	// ether9.ntp=10.0.2.2,192.0.2.123:123: the NTP servers (addresses;
	// port 123 when left out), in place of the lease's.
	NTP []netip.AddrPort
	// DNS servers to ask besides those DHCP names: ether9.dns=9.9.9.9,2620:fe::fe
	DNS []netip.Addr
	// NICs holds what ether9.etherN.ip=A[,B] and ether9.etherN.dhcp=off
	// say of interface N (ether9.ip and ether9.gw are ether0's).
	NICs    map[int]NICOptions
	Unknown []string // ether9.* parameters this version does not know
	// DHCPTiming is the DHCP client's retransmission and back-off (not
	// on the command line: tests shorten it); zero: the defaults.
	DHCPTiming dhcp.Config
	// IdleEpoch is when the idle tick counts from (System.idleTick; not
	// on the command line: tests move its phase); zero: Start.
	IdleEpoch time.Time
}

// NICOptions are one interface's own parameters.
type NICOptions struct {
	Addrs  []netip.Prefix // static addresses, IPv4 or IPv6
	NoDHCP bool           // ether9.etherN.dhcp=off
}

// maxNICs bounds N in ether9.etherN.*: no machine has more ports.
const maxNICs = 64

// DefaultOptions is what an empty command line means.
func DefaultOptions() Options {
	return Options{DHCP: true, IOMMU: "strict", HTTPPort: 80, Ping: true, IRQ: true, MSIX: true, IntRemap: true, Spin: defaultSpin}
}

// ParseCmdline reads the ether9.* parameters out of a kernel command line.
// Other parameters belong to the kernel and are ignored. A malformed value
// is reported and leaves that option at its default; the rest still apply,
// because a typo must not stop the machine from booting.
func ParseCmdline(cmdline string) (Options, error) {
	return DefaultOptions().With(cmdline)
}

// With is o with the ether9.* parameters of cmdline applied over it, as
// ParseCmdline applies them over the defaults.
func (o Options) With(cmdline string) (Options, error) {
	o.NICs = maps.Clone(o.NICs)
	o.Unknown = slices.Clone(o.Unknown)
	var errs []error
	for _, f := range strings.Fields(cmdline) {
		key, val, hasVal := strings.Cut(f, "=")
		name, ok := strings.CutPrefix(key, "ether9.")
		if !ok {
			continue
		}
		if err := o.set(name, val, hasVal); err != nil {
			errs = append(errs, fmt.Errorf("cmdline %s: %w", f, err))
		}
	}
	return o, errors.Join(errs...)
}

func (o *Options) set(name, val string, hasVal bool) error {
	if ifc, key, ok := strings.Cut(name, "."); ok && strings.HasPrefix(ifc, "ether") {
		return o.setNIC(ifc, key, val, hasVal)
	}
	switch name {
	case "dns":
		var as []netip.Addr
		for _, f := range strings.Split(val, ",") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return err
			}
			as = append(as, a)
		}
		o.DNS = as
	case "ip":
		p, err := netip.ParsePrefix(val)
		if err != nil {
			return err
		}
		o.IP = p
	case "gw":
		a, err := netip.ParseAddr(val)
		if err != nil {
			return err
		}
		o.Gateway = a
	case "dhcp":
		b, err := parseBool(val, hasVal)
		if err != nil {
			return err
		}
		o.DHCP = b
	case "ping":
		b, err := parseBool(val, hasVal)
		if err != nil {
			return err
		}
		o.Ping = b
	case "irq":
		b, err := parseBool(val, hasVal)
		if err != nil {
			return err
		}
		o.IRQ = b
	case "msix":
		b, err := parseBool(val, hasVal)
		if err != nil {
			return err
		}
		o.MSIX = b
	case "intremap":
		b, err := parseBool(val, hasVal)
		if err != nil {
			return err
		}
		o.IntRemap = b
	case "spin":
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 || d > maxSpin {
			return fmt.Errorf("want a duration from 0 to %v", maxSpin)
		}
		o.Spin = d
	case "queues":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > maxQueuePairs {
			return fmt.Errorf("want a count from 1 to %d", maxQueuePairs)
		}
		o.Queues = n
	case "ntp":
		var out []netip.AddrPort
		for _, f := range strings.Split(val, ",") {
			ap, err := netip.ParseAddrPort(f)
			if err != nil {
				a, err2 := netip.ParseAddr(f)
				if err2 != nil {
					return fmt.Errorf("%q: want an address, with :port or without", f)
				}
				ap = netip.AddrPortFrom(a, 123)
			}
			out = append(out, ap)
		}
		o.NTP = out
	case "selftest":
		b, err := parseBool(val, hasVal)
		if err != nil {
			return err
		}
		o.Selftest = b
	case "iommu":
		switch val {
		case "strict", "deferred", "off":
			o.IOMMU = val
		default:
			return fmt.Errorf("want strict, deferred or off")
		}
	case "http":
		n, err := strconv.Atoi(val)
		if err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("want a port from 1 to 65535")
		}
		o.HTTPPort = n
	case "9p":
		switch val {
		case "rw", "ro", "off":
			o.NineP = val
		default:
			return fmt.Errorf("want rw, ro or off")
		}
	case "admin":
		w, err := admin.ParseWhere(val)
		if err != nil {
			return err
		}
		o.Admin = w
	case "token":
		t, err := admin.ParseToken(val)
		if err != nil {
			return err
		}
		o.Token = t
	default:
		o.Unknown = append(o.Unknown, name)
	}
	return nil
}

// setNIC sets ether9.etherN.key.
func (o *Options) setNIC(ifc, key, val string, hasVal bool) error {
	n, err := strconv.Atoi(strings.TrimPrefix(ifc, "ether"))
	if err != nil || n < 0 || n >= maxNICs || strconv.Itoa(n) != ifc[len("ether"):] {
		return fmt.Errorf("%s: want ether0 to ether%d", ifc, maxNICs-1)
	}
	c := o.NICs[n]
	switch key {
	case "ip":
		var ps []netip.Prefix
		for _, f := range strings.Split(val, ",") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
		c.Addrs = ps
	case "dhcp":
		b, err := parseBool(val, hasVal)
		if err != nil {
			return err
		}
		c.NoDHCP = !b
	default:
		o.Unknown = append(o.Unknown, ifc+"."+key)
		return nil
	}
	if o.NICs == nil {
		o.NICs = map[int]NICOptions{}
	}
	o.NICs[n] = c
	return nil
}

func parseBool(val string, hasVal bool) (bool, error) {
	if !hasVal {
		return true, nil // a bare flag: ether9.selftest
	}
	switch val {
	case "1", "on", "yes", "true":
		return true, nil
	case "0", "off", "no", "false":
		return false, nil
	}
	return false, fmt.Errorf("want on or off")
}
