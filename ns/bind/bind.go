// Package bind gives ether9's components their files in the namespace:
// each function here takes one component and registers the files that
// show it, so the tree itself knows nothing of drivers.
package bind

import (
	"fmt"
	"io"
	"strings"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/netstack/capture"
	"github.com/ether9/ether9/ns"
)

// Link is what the link endpoint above a NIC adds to its files: words of
// its own in the ctl file (the rest go to the driver), its settings, and
// the packet capture of the frames it hands the stack and the driver.
type Link interface {
	Ctl(cmd string) error
	CtlState() string
	Capture() *capture.Capture
}

// NIC registers /net/<name>/{addr,ctl,stats,ifstats,link} and, with the
// link endpoint l (nil for a bare driver), /net/<name>/capture.
func NIC(n *ns.Namespace, c nic.NIC, l Link) error {
	dir := "/net/" + c.Name()
	ctl := ns.Ctl{Render: func() (string, error) { return ctlState(c, l), nil }, Do: c.Ctl}
	if l != nil {
		ctl.Do = l.Ctl
	}
	files := []struct {
		name string
		f    ns.File
	}{
		{"addr", ns.Text(func() string { return MAC(c.MAC()) + "\n" })},
		{"ctl", ctl},
		{"stats", ns.Text(func() string { return stats(c.Stats()) + captureStats(l) })},
		{"ifstats", ns.Text(func() string { return ifstats(c) })},
		{"link", ns.Text(func() string { return linkText(c) })},
	}
	if l != nil {
		files = append(files, struct {
			name string
			f    ns.File
		}{"capture", ns.StreamFunc(func(via ns.Conn) (io.ReadCloser, error) { return l.Capture().Open(via.Local, via.Remote) })})
	}
	for _, f := range files {
		if err := n.Add(dir+"/"+f.name, f.f); err != nil {
			return fmt.Errorf("bind %s: %w", c.Name(), err)
		}
	}
	return nil
}

// captureStats are the capture's counters, in the stats file's form.
func captureStats(l Link) string {
	if l == nil {
		return ""
	}
	frames, dropped, readers := l.Capture().Stats()
	return fmt.Sprintf("capture_frames: %d\ncapture_dropped: %d\ncapture_readers: %d\n", frames, dropped, readers)
}

// MAC formats a hardware address.
func MAC(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

func ctlState(c nic.NIC, l Link) string {
	s := fmt.Sprintf("mtu %d\n", c.MTU())
	if l != nil {
		s += l.CtlState()
	}
	return s
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
