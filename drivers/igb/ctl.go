package igb

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ether9/ether9/drivers/ring"
)

// Ctl implements nic.NIC. Commands:
//
//	copybreak N   frames shorter than N bytes are copied (0..2048)
//	tso on|off
//	mtu N
//	addmulti MAC, remmulti MAC, allmulti on|off   the multicast filter (mta.go)
//	debug inject-unmapped-rx   see debugCtl
//
// A bad command changes nothing.
func (d *Device) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) != 2 {
		return fmt.Errorf("igb %s: ctl %q: want a command and one argument", d.name, cmd)
	}
	switch f[0] {
	case "copybreak":
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 || n > ring.HalfPage {
			return fmt.Errorf("igb %s: copybreak %q: want 0..%d", d.name, f[1], ring.HalfPage)
		}
		for _, q := range d.queues {
			q.rx.SetCopybreak(n)
		}
	case "tso":
		switch f[1] {
		case "on":
			d.tso.Store(true)
		case "off":
			d.tso.Store(false)
		default:
			return fmt.Errorf("igb %s: tso %q: want on or off", d.name, f[1])
		}
	case "mtu":
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("igb %s: mtu %q: not a number", d.name, f[1])
		}
		return d.SetMTU(n)
	case "addmulti", "remmulti", "allmulti":
		return d.mc.Ctl(d.regs, "igb "+d.name, f[0], f[1])
	case "debug":
		return d.debugCtl(f[1])
	default:
		return fmt.Errorf("igb %s: unknown ctl %q (copybreak, tso, mtu, addmulti, remmulti, allmulti, debug)", d.name, f[0])
	}
	return nil
}
