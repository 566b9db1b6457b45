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

// SetCsumAudit turns the checksum audit on or off: on, the IPv4, TCP and
// UDP checksums of every frame the device vouched for are checked here
// too, and a frame whose checksum is wrong is counted (rx_csum_hw_wrong)
// and dropped, as a frame that failed the device's check would be. For
// bringing up a NIC, or finding where damaged bytes come from: a device
// that verifies a checksum and then hands up other bytes, or a driver
// that hands up the wrong buffer, is caught here, where without the
// audit the stack trusts the device and the damage reaches the reader.
// Each queue takes the change at its next poll.
func (e *Endpoint) SetCsumAudit(on bool) { e.audit.Store(on) }

// CsumAudit reports whether the checksum audit is on.
func (e *Endpoint) CsumAudit() bool { return e.audit.Load() }

// Capture is the interface's packet capture: the frames handed to the
// stack and to the driver, for pcap readers (/net/etherN/capture).
func (e *Endpoint) Capture() *capture.Capture { return e.capture }

// Ctl carries out one control message. The endpoint's own words are
//
//	gro on|off              receive coalescing (SetGRO)
//	csum audit on|off       check device-verified checksums too (SetCsumAudit)
//	capture on|off          keep frames for the capture's readers
//	capture snaplen N       bytes kept of each frame, while off
//
// and every other message is the driver's (nic.NIC.Ctl), so the endpoint
// can stand for the interface's ctl file. A bad message changes nothing.
func (e *Endpoint) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) == 0 || (f[0] != "gro" && f[0] != "csum" && f[0] != "capture") {
		return e.nic.Ctl(cmd)
	}
	switch {
	case f[0] == "capture":
		return e.captureCtl(cmd, f[1:])
	case f[0] == "gro" && len(f) == 2:
		return e.onOff(f[0], f[1], e.SetGRO)
	case f[0] == "csum" && len(f) == 3 && f[1] == "audit":
		return e.onOff("csum audit", f[2], e.SetCsumAudit)
	}
	return fmt.Errorf("netstack: %s: ctl %q: want gro on|off or csum audit on|off", e.nic.Name(), cmd)
}

// onOff applies word, on or off, to set; what names the setting.
func (e *Endpoint) onOff(what, word string, set func(bool)) error {
	switch word {
	case "on":
		set(true)
	case "off":
		set(false)
	default:
		return fmt.Errorf("netstack: %s: %s %q: want on or off", e.nic.Name(), what, word)
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
	word := func(on bool) string {
		if on {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("gro %s\ncsum audit %s\ncapture %s\ncapture snaplen %d\n",
		word(e.GRO()), word(e.CsumAudit()), word(e.capture.On()), e.capture.Snaplen())
}
