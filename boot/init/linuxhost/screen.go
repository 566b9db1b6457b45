//go:build linux

package linuxhost

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ether9/ether9/boot/init/system"
	"golang.org/x/sys/unix"
)

// activeConsoles lists the consoles the kernel was given, /dev/console's
// last (Documentation/ABI/testing/sysfs-tty).
const activeConsoles = "/sys/class/tty/console/active"

// openScreens opens every console of the kernel's but /dev/console's (the
// screen, tty0, when the serial port is /dev/console), so that a machine
// watched on its screen shows the lines the serial port gets.
func openScreens(con *Console) []io.Writer {
	b, err := os.ReadFile(activeConsoles)
	if err != nil {
		con.Logf("console: %v", err)
		return nil
	}
	names := strings.Fields(string(b))
	if len(names) < 2 {
		return nil
	}
	var ws []io.Writer
	for _, n := range names[:len(names)-1] {
		if strings.ContainsAny(n, "/.") {
			continue
		}
		f, err := os.OpenFile("/dev/"+n, os.O_WRONLY|unix.O_NOCTTY, 0)
		if err != nil {
			con.Logf("console: %v", err)
			continue
		}
		ws = append(ws, f)
		con.Logf("console: also on %s", n)
	}
	return ws
}

// bootLineNeeds are words of the image's command line that Linux must
// have seen: without them it keeps VT-d's interrupt remapping and ether9
// cannot take the unit. Firmware that passes boot options replaces a
// disk image's built-in command line when Secure Boot is off.
var bootLineNeeds = []string{"intel_iommu=off", "intremap=off"}

// CheckBootLine says on the console which of bootLineNeeds cmdline lacks.
func CheckBootLine(con *Console, cmdline string) {
	if m := bootLineMissing(cmdline); len(m) > 0 {
		con.Logf("ether9: the kernel command line lacks %s (the firmware's boot options replaced it?): Linux keeps VT-d and ether9 cannot take it", strings.Join(m, " "))
	}
}

// bootLineMissing lists the words of bootLineNeeds cmdline lacks.
func bootLineMissing(cmdline string) []string {
	words := strings.Fields(cmdline)
	var missing []string
	for _, n := range bootLineNeeds {
		if !slices.Contains(words, n) {
			missing = append(missing, n)
		}
	}
	return missing
}

// cardWait bounds the wait for an address before the card is printed
// without one.
const cardWait = 60 * time.Second

// Card prints, once the first NIC has an address (or cardWait has
// passed), the lines a person photographs off the screen: the boot line,
// the NICs, and where to point a browser.
func Card(con *Console, cmdline string, opt system.Options, sys *system.System) {
	addr, how := address(opt, sys)
	for deadline := time.Now().Add(cardWait); !addr.IsValid() && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		addr, how = address(opt, sys)
	}
	for _, l := range card(cmdline, sys.Ports(), addr, how, opt.HTTPPort) {
		con.Logf("%s", l)
	}
}

// address is the first NIC's address and where it came from.
func address(opt system.Options, sys *system.System) (netip.Prefix, string) {
	if opt.IP.IsValid() {
		return opt.IP, "ether9.ip"
	}
	if st := sys.Stack(); st != nil {
		if l := st.Lease(0); l != nil && l.Addr.IsValid() {
			return l.Addr, "dhcp"
		}
	}
	return netip.Prefix{}, ""
}

const cardRule = "ether9: ================================================================"

// card is the photograph's text: one fact a line, each line starting
// with ether9: as the rest of the console does.
func card(cmdline string, ports []system.Port, addr netip.Prefix, how string, httpPort int) []string {
	lines := []string{cardRule, "ether9: boot line: " + strings.TrimSpace(cmdline)}
	if len(ports) == 0 {
		lines = append(lines, "ether9: nic: none bound")
	}
	for _, p := range ports {
		m := p.NIC.MAC()
		lines = append(lines, fmt.Sprintf("ether9: nic: %s %s %04x:%04x at %v mac %02x:%02x:%02x:%02x:%02x:%02x link %v",
			p.NIC.Name(), p.Func.Driver, p.Func.Vendor, p.Func.Device, p.Func.Addr, m[0], m[1], m[2], m[3], m[4], m[5], p.NIC.Link()))
	}
	if addr.IsValid() {
		url := "http://" + addr.Addr().String()
		if httpPort != 80 {
			url = fmt.Sprintf("http://%v:%d", addr.Addr(), httpPort)
		}
		lines = append(lines, fmt.Sprintf("ether9: address: %v (%s), status at %s/", addr, how, url))
	} else {
		lines = append(lines, "ether9: address: none yet (no DHCP answer; set one with ether9.ip=A.B.C.D/N)")
	}
	return append(lines, cardRule)
}
