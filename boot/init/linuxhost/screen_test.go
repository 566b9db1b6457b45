//go:build linux

package linuxhost

import (
	"net/netip"
	"strings"
	"testing"
)

// TestCard: the boot line as the kernel has it, the address with the
// URL to type, and a clear line when there is none. (The NIC line is
// checked on a real boot: the QEMU self-test.)
func TestCard(t *testing.T) {
	c := card(" console=tty0 quiet \n", nil, netip.MustParsePrefix("192.168.1.9/24"), "dhcp", 80)
	got := strings.Join(c, "\n")
	for _, want := range []string{
		"ether9: boot line: console=tty0 quiet\n",
		"ether9: nic: none bound\n",
		"ether9: address: 192.168.1.9/24 (dhcp), status at http://192.168.1.9/\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("card lacks %q:\n%s", want, got)
		}
	}
	if c[0] != cardRule || c[len(c)-1] != cardRule {
		t.Errorf("card not framed:\n%s", got)
	}
	c = card("x", nil, netip.MustParsePrefix("10.0.0.2/8"), "ether9.ip", 8080)
	if !strings.Contains(strings.Join(c, "\n"), "status at http://10.0.0.2:8080/") {
		t.Errorf("port 8080 not in the URL:\n%s", strings.Join(c, "\n"))
	}
	c = card("x", nil, netip.Prefix{}, "", 80)
	if !strings.Contains(strings.Join(c, "\n"), "ether9: address: none yet") {
		t.Errorf("no address line:\n%s", strings.Join(c, "\n"))
	}
}

func TestBootLineMissing(t *testing.T) {
	if m := bootLineMissing("console=ttyS0 intel_iommu=off intremap=off"); len(m) != 0 {
		t.Errorf("full line: missing %q", m)
	}
	if m := bootLineMissing(`\EFI\BOOT\BOOTX64.EFI intremap=offx`); strings.Join(m, " ") != "intel_iommu=off intremap=off" {
		t.Errorf("firmware's line: missing %q, want both", m)
	}
}
