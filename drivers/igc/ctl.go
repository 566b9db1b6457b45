package igc

import (
	"fmt"
	"strconv"
	"strings"
)

// Ctl implements nic.NIC. Commands:
//
//	mtu N            change the MTU; every ring re-decides build or construct
//	build auto|off   auto: build where the seed's rule allows; off: construct always
//	tso on|off
//	rss on|off       spread flows over the queues, or everything to queue 0
//	addmulti MAC, remmulti MAC, allmulti on|off   the multicast filter (mta.go)
//	debug inject-unmapped-rx   see debugCtl
//
// A bad command changes nothing.
func (d *Device) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) != 2 {
		return fmt.Errorf("igc %s: ctl %q: want a command and one argument", d.name, cmd)
	}
	switch f[0] {
	case "mtu":
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("igc %s: mtu %q: not a number", d.name, f[1])
		}
		return d.SetMTU(n)
	case "build":
		var on bool
		switch f[1] {
		case "auto":
			on = true
		case "off":
		default:
			return fmt.Errorf("igc %s: build %q: want auto or off", d.name, f[1])
		}
		return d.setBuild(on)
	case "tso", "rss":
		var on bool
		switch f[1] {
		case "on":
			on = true
		case "off":
		default:
			return fmt.Errorf("igc %s: %s %q: want on or off", d.name, f[0], f[1])
		}
		if f[0] == "tso" {
			d.tso.Store(on)
			return nil
		}
		d.cfgMu.Lock()
		defer d.cfgMu.Unlock()
		d.rss.Store(on)
		d.setupRSS()
		return nil
	case "addmulti", "remmulti", "allmulti":
		return d.mc.Ctl(d.regs, "igc "+d.name, f[0], f[1])
	case "debug":
		return d.debugCtl(f[1])
	}
	return fmt.Errorf("igc %s: unknown ctl %q (mtu, build, tso, rss, addmulti, remmulti, allmulti, debug)", d.name, f[0])
}

// setBuild sets the build policy and lets every ring re-decide.
func (d *Device) setBuild(on bool) error {
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	d.build.Store(on)
	for _, q := range d.queues {
		if err := q.relayout(); err != nil {
			return err
		}
	}
	return nil
}
