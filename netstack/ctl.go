package netstack

import (
	"fmt"
	"strings"
)

// SetGRO turns receive coalescing on or off. Each queue takes the change
// at its next poll.
func (e *Endpoint) SetGRO(on bool) { e.groOff.Store(!on) }

// GRO reports whether receive coalescing is on. It works only while the
// driver verifies receive checksums (Capabilities); otherwise frames pass
// on one by one whatever this says.
func (e *Endpoint) GRO() bool { return !e.groOff.Load() }

// Ctl carries out one control message. The endpoint's own words are
//
//	gro on|off    receive coalescing (SetGRO)
//
// and every other message is the driver's (nic.NIC.Ctl), so the endpoint
// can stand for the interface's ctl file. A bad message changes nothing.
func (e *Endpoint) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) == 0 || f[0] != "gro" {
		return e.nic.Ctl(cmd)
	}
	if len(f) != 2 {
		return fmt.Errorf("netstack: %s: ctl %q: want gro on|off", e.nic.Name(), cmd)
	}
	switch f[1] {
	case "on":
		e.SetGRO(true)
	case "off":
		e.SetGRO(false)
	default:
		return fmt.Errorf("netstack: %s: gro %q: want on or off", e.nic.Name(), f[1])
	}
	return nil
}

// CtlState is the endpoint's settings as the lines Ctl accepts.
func (e *Endpoint) CtlState() string {
	if e.GRO() {
		return "gro on\n"
	}
	return "gro off\n"
}
