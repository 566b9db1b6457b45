//go:build linux

package linuxhost

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// securityfs holds the lockdown state; nothing else in the image mounts it.
const securityfs = "/sys/kernel/security"

// lockdownHint adds the reason to err when the kernel is locked down:
// Debian's kernel locks itself down when UEFI Secure Boot is on
// (CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT), and lockdown forbids iopl,
// /dev/mem and mapping BARs, without which /init drives nothing.
func lockdownHint(err error) error {
	b, rerr := os.ReadFile(securityfs + "/lockdown")
	if rerr != nil {
		unix.Mount("securityfs", securityfs, "securityfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		if b, rerr = os.ReadFile(securityfs + "/lockdown"); rerr != nil {
			return err
		}
	}
	mode := lockdownMode(string(b))
	if mode == "" || mode == "none" {
		return err
	}
	return fmt.Errorf("%w: the kernel is locked down (%s), as Debian's kernel is when UEFI Secure Boot is on: turn Secure Boot off in the firmware setup", err, mode)
}

// lockdownMode reads the bracketed mode of securityfs's lockdown file,
// "none [integrity] confidentiality", or "".
func lockdownMode(s string) string {
	for _, f := range strings.Fields(s) {
		if len(f) > 2 && f[0] == '[' && f[len(f)-1] == ']' {
			return f[1 : len(f)-1]
		}
	}
	return ""
}
