package igc

import "fmt"

// Ctl implements nic.NIC. Commands:
//
//	mtu N            change the MTU; every ring re-decides build or construct
//	build auto|off   auto: build where the seed's rule allows; off: construct always
//	rss on|off       spread flows over the queues, or everything to queue 0
//
// and those of adv.Port.Ctl (tso, the multicast filter, debug). A bad
// command changes nothing.
func (d *Device) Ctl(cmd string) error {
	f, err := d.Fields(cmd)
	if err != nil {
		return err
	}
	switch f[0] {
	case "build":
		var on bool
		switch f[1] {
		case "auto":
			on = true
		case "off":
		default:
			return fmt.Errorf("igc %s: build %q: want auto or off", d.Name(), f[1])
		}
		return d.setBuild(on)
	case "rss":
		on, err := d.OnOff(f)
		if err != nil {
			return err
		}
		d.CfgMu.Lock()
		defer d.CfgMu.Unlock()
		d.rss.Store(on)
		d.setupRSS()
		return nil
	}
	if ok, err := d.Port.Ctl(f, d.SetMTU); ok {
		return err
	}
	return fmt.Errorf("igc %s: unknown ctl %q (mtu, build, tso, rss, addmulti, remmulti, allmulti, debug)", d.Name(), f[0])
}

// setBuild sets the build policy and lets every ring re-decide.
func (d *Device) setBuild(on bool) error {
	d.CfgMu.Lock()
	defer d.CfgMu.Unlock()
	d.build.Store(on)
	for _, q := range d.queues {
		if err := q.relayout(); err != nil {
			return err
		}
	}
	return nil
}
