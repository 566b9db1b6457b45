package e1000e

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/ether9/ether9/drivers/ring"
)

// maxCopybreak: a copybreak above the buffer size copies every frame.
const maxCopybreak = rxBufSize

// Ctl implements nic.NIC. Commands:
//
//	copybreak N            frames shorter than N bytes are copied (0..2048)
//	copybreak auto         measure copy and handoff costs now and set it
//	copybreak-mode sync|unmap
//	tso on|off|auto
//	mtu N
//	addmulti MAC           pass frames to the group MAC (counted)
//	remmulti MAC           undo one addmulti
//	allmulti on|off        pass every multicast frame
//	promiscuous on|off     pass every frame (RCTL.UPE and MPE)
//	rxring N, txring N     resize a ring at run time (a multiple of 8, 64..4096)
//	reset                  reset the controller and bring it up as it was
//	debug inject-unmapped-rx  point the next armed RX descriptor at an
//	                       unmapped IOVA (see debugCtl)
//
// A bad command changes nothing.
func (d *Device) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) == 1 && f[0] == "reset" {
		return d.Reset()
	}
	if len(f) != 2 {
		return fmt.Errorf("e1000e %s: ctl %q: want a command and one argument", d.name, cmd)
	}
	switch f[0] {
	case "copybreak":
		if f[1] == "auto" {
			return d.copybreakAuto()
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 || n > maxCopybreak {
			return fmt.Errorf("e1000e %s: copybreak %q: want auto or 0..%d", d.name, f[1], maxCopybreak)
		}
		d.setCopybreak(n)
	case "copybreak-mode":
		m, err := ring.ParseMode(f[1])
		if err != nil {
			return fmt.Errorf("e1000e %s: %w", d.name, err)
		}
		d.q.rxMu.Lock()
		d.q.rx.SetMode(m)
		d.q.rxMu.Unlock()
	case "tso":
		m, err := ParseTSOMode(f[1])
		if err != nil {
			return fmt.Errorf("e1000e %s: %w", d.name, err)
		}
		d.linkMu.Lock()
		d.tsoMode.Store(uint32(m))
		d.evalTSO(*d.link.Load(), true)
		d.linkMu.Unlock()
	case "mtu":
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("e1000e %s: mtu %q: not a number", d.name, f[1])
		}
		return d.SetMTU(n)
	case "addmulti", "remmulti":
		hw, err := net.ParseMAC(f[1])
		if err != nil || len(hw) != 6 {
			return fmt.Errorf("e1000e %s: %s %q: want a 48-bit MAC address", d.name, f[0], f[1])
		}
		mac := [6]byte(hw)
		if f[0] == "addmulti" {
			return d.AddMulticast(mac)
		}
		return d.RemoveMulticast(mac)
	case "allmulti":
		switch f[1] {
		case "on", "off":
			return d.SetAllMulticast(f[1] == "on")
		}
		return fmt.Errorf("e1000e %s: allmulti %q: want on or off", d.name, f[1])
	case "promiscuous":
		switch f[1] {
		case "on", "off":
			return d.SetPromiscuous(f[1] == "on")
		}
		return fmt.Errorf("e1000e %s: promiscuous %q: want on or off", d.name, f[1])
	case "rxring", "txring":
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("e1000e %s: %s %q: not a number", d.name, f[0], f[1])
		}
		if f[0] == "rxring" {
			return d.SetRxRing(n)
		}
		return d.SetTxRing(n)
	case "debug":
		return d.debugCtl(f[1])
	default:
		return fmt.Errorf("e1000e %s: unknown ctl %q (copybreak, copybreak-mode, tso, mtu, addmulti, remmulti, allmulti, promiscuous, rxring, txring, reset, debug)", d.name, f[0])
	}
	return nil
}
