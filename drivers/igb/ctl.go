package igb

import (
	"fmt"
	"strconv"

	"github.com/ether9/ether9/drivers/ring"
)

// Ctl implements nic.NIC. Commands:
//
//	copybreak N   frames shorter than N bytes are copied (0..2048)
//	build on|off  on: a longer frame goes up as its half page alone;
//	              off (the default): its headers copied into a head and
//	              the rest of the half attached (ring.PageRxRing)
//
// and those of adv.Port.Ctl (tso, mtu, the multicast filter, debug). A
// bad command changes nothing.
func (d *Device) Ctl(cmd string) error {
	f, err := d.Fields(cmd)
	if err != nil {
		return err
	}
	if f[0] == "copybreak" {
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 || n > ring.HalfPage {
			return fmt.Errorf("igb %s: copybreak %q: want 0..%d", d.Name(), f[1], ring.HalfPage)
		}
		for _, q := range d.queues {
			q.rx.SetCopybreak(n)
		}
		return nil
	}
	if f[0] == "build" {
		on, err := d.OnOff(f)
		if err != nil {
			return err
		}
		for _, q := range d.queues {
			q.rx.SetBuild(on)
		}
		return nil
	}
	if ok, err := d.Port.Ctl(f, d.SetMTU); ok {
		return err
	}
	return fmt.Errorf("igb %s: unknown ctl %q (copybreak, build, tso, mtu, addmulti, remmulti, allmulti, debug)", d.Name(), f[0])
}
