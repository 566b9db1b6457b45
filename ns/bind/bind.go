// Package bind gives ether9's components their files in the namespace:
// each function here takes one component and registers the files that
// show it, so the tree itself knows nothing of drivers.
package bind

import (
	"fmt"
	"strings"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/ns"
)

// NIC registers /net/<name>/{addr,ctl,stats,ifstats,link}.
func NIC(n *ns.Namespace, c nic.NIC) error {
	dir := "/net/" + c.Name()
	files := []struct {
		name string
		f    ns.File
	}{
		{"addr", ns.Text(func() string { return MAC(c.MAC()) + "\n" })},
		{"ctl", ns.Ctl{Render: func() (string, error) { return ctlState(c), nil }, Do: c.Ctl}},
		{"stats", ns.Text(func() string { return stats(c.Stats()) })},
		{"ifstats", ns.Text(func() string { return ifstats(c) })},
		{"link", ns.Text(func() string { return linkText(c) })},
	}
	for _, f := range files {
		if err := n.Add(dir+"/"+f.name, f.f); err != nil {
			return fmt.Errorf("bind %s: %w", c.Name(), err)
		}
	}
	return nil
}

// MAC formats a hardware address.
func MAC(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

func ctlState(c nic.NIC) string {
	return fmt.Sprintf("mtu %d\n", c.MTU())
}

func stats(all []nic.Stat) string {
	var b strings.Builder
	for _, s := range all {
		fmt.Fprintf(&b, "%s: %d\n", s.Name, s.Value)
	}
	return b.String()
}

// ifstats are the device's statistics registers, or every counter when
// the driver cannot tell them apart.
func ifstats(c nic.NIC) string {
	if d, ok := c.(nic.DeviceStater); ok {
		return stats(d.DeviceStats())
	}
	return stats(c.Stats())
}

func linkText(c nic.NIC) string {
	var b strings.Builder
	l := c.Link()
	if l.Up {
		duplex := "full"
		if !l.FullDuplex {
			duplex = "half"
		}
		fmt.Fprintf(&b, "link: up\nspeed: %d\nduplex: %s\n", l.SpeedMbps, duplex)
	} else {
		b.WriteString("link: down\n")
	}
	f := c.Features()
	tso := "off"
	if f.TSOv4 || f.TSOv6 {
		tso = "on"
	}
	if r, ok := c.(nic.TSOReasoner); ok {
		if why := r.TSOReason(); why != "" {
			tso += " (" + why + ")"
		}
	}
	fmt.Fprintf(&b, "tso: %s\n", tso)
	fmt.Fprintf(&b, "rxcsum: %s\ntxcsum: %s\n", onOff(f.RxChecksum), onOff(f.TxChecksum))
	return b.String()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
