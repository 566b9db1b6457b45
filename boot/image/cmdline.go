package image

import (
	"fmt"
	"strings"
)

// BaseCmdline is the kernel command line every image boots with. Linux
// must leave VT-d to us: intel_iommu=off alone keeps interrupt remapping
// and queued invalidation on, and then the unit cannot be mapped or driven
// with register-based invalidation; intremap=off releases it completely.
const BaseCmdline = "console=ttyS0 panic=-1 quiet intel_iommu=off intremap=off"

// Cmdline joins the base command line with extra words. Each extra word is
// either an ether9.* option for /init or a kernel parameter; words that
// would undo the base (handing VT-d back to Linux) are refused.
func Cmdline(extra ...string) (string, error) {
	words := strings.Fields(BaseCmdline)
	for _, e := range extra {
		for _, w := range strings.Fields(e) {
			key, _, _ := strings.Cut(w, "=")
			switch key {
			case "intel_iommu", "intremap", "iommu":
				return "", fmt.Errorf("cmdline: %q would give VT-d back to Linux; ether9 drives it itself", w)
			}
			words = append(words, w)
		}
	}
	return strings.Join(words, " "), nil
}

// MetalBaseCmdline is BaseCmdline without its console: the metal
// platform's base line (MetalCmdline).
const MetalBaseCmdline = "panic=-1 quiet intel_iommu=off intremap=off"

// MetalCmdline is Cmdline for the metal platform: without the base
// line's console=ttyS0, so that the shim takes the serial port firmware
// redirects its console to (the SPCR table; IPMI serial-over-LAN is on
// COM2 on many servers), COM1 where there is none. A console= among
// extra still picks the port.
func MetalCmdline(extra ...string) (string, error) {
	line, err := Cmdline(extra...)
	if err != nil {
		return "", err
	}
	return MetalBaseCmdline + strings.TrimPrefix(line, BaseCmdline), nil
}

// HardwareConsoles replace the base line's console on a machine: the
// screen (tty0, the firmware's framebuffer) for a machine without a
// serial port, and the serial port at the speed hardware consoles expect
// (Linux sets 9600 baud unless told; QEMU's port ignores it). The last
// one named is /dev/console, where the shell runs.
const HardwareConsoles = "console=tty0 console=ttyS0,115200n8"

// HardwareCmdline returns cmdline, made by Cmdline, with HardwareConsoles
// in place of the base line's serial console.
func HardwareCmdline(cmdline string) string {
	words := strings.Fields(cmdline)
	for i, w := range words {
		if w == "console=ttyS0" {
			words[i] = HardwareConsoles
		}
	}
	return strings.Join(words, " ")
}
