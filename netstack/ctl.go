package netstack

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ether9/ether9/netstack/capture"
)

// SetGRO turns receive coalescing on or off. Each queue takes the change
// at its next poll.
func (e *Endpoint) SetGRO(on bool) { e.groOff.Store(!on) }

// GRO reports whether receive coalescing is on. It works only while the
// driver verifies receive checksums (Capabilities); otherwise frames pass
// on one by one whatever this says.
func (e *Endpoint) GRO() bool { return !e.groOff.Load() }

// Capture is the interface's packet capture: the frames handed to the
// stack and to the driver, for pcap readers (/net/etherN/capture).
func (e *Endpoint) Capture() *capture.Capture { return e.capture }

// Ctl carries out one control message. The endpoint's own words are
//
//	gro on|off              receive coalescing (SetGRO)
//	capture on|off          keep frames for the capture's readers
//	capture snaplen N       bytes kept of each frame, while off
//
// and every other message is the driver's (nic.NIC.Ctl), so the endpoint
// can stand for the interface's ctl file. A bad message changes nothing.
func (e *Endpoint) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) == 0 || (f[0] != "gro" && f[0] != "capture") {
		return e.nic.Ctl(cmd)
	}
	if f[0] == "capture" {
		return e.captureCtl(cmd, f[1:])
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

func (e *Endpoint) captureCtl(cmd string, f []string) error {
	switch {
	case len(f) == 1 && f[0] == "on":
		e.capture.Start()
		return nil
	case len(f) == 1 && f[0] == "off":
		e.capture.Stop()
		return nil
	case len(f) == 2 && f[0] == "snaplen":
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("netstack: %s: capture snaplen %q: want a number", e.nic.Name(), f[1])
		}
		if err := e.capture.SetSnaplen(n); err != nil {
			return fmt.Errorf("netstack: %s: %w", e.nic.Name(), err)
		}
		return nil
	}
	return fmt.Errorf("netstack: %s: ctl %q: want capture on|off or capture snaplen N", e.nic.Name(), cmd)
}

// CtlState is the endpoint's settings as the lines Ctl accepts.
func (e *Endpoint) CtlState() string {
	gro, capt := "off", "off"
	if e.GRO() {
		gro = "on"
	}
	if e.capture.On() {
		capt = "on"
	}
	return fmt.Sprintf("gro %s\ncapture %s\ncapture snaplen %d\n", gro, capt, e.capture.Snaplen())
}
