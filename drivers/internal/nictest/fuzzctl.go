package nictest

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
)

// CtlSeeds start a fuzz target of a driver's ctl: the three families'
// commands, good and bad.
var CtlSeeds = []string{
	"", " ", "copybreak 256", "copybreak 0", "copybreak -1", "copybreak 4097", "copybreak auto",
	"copybreak-mode sync", "copybreak-mode unmap", "copybreak-mode fast",
	"tso on", "tso off", "tso auto", "tso maybe", "mtu 1500", "mtu 9000", "mtu 67", "mtu x",
	"addmulti 01:00:5e:00:00:01", "remmulti 01:00:5e:00:00:01", "addmulti 52:54:00:12:34:56", "addmulti zz",
	"allmulti on", "allmulti off", "promiscuous on", "promiscuous off", "promiscuous maybe",
	"rxring 256", "rxring 7", "txring 4096", "txring 99999", "reset", "reset now",
	"build on", "build off", "debug inject-unmapped-rx", "debug nothing", "frob 1", "tso on off",
	"copybreak\x00256", "mtu 1500\n", "mtu 01500", "mtu +1500", "mtu 9223372036854775808",
}

// FuzzCtl feeds the NIC's ctl every command the fuzzer makes: each
// applies, or is refused with an error that starts with prefix (the
// driver and the interface) and leaves state as it was. state renders all
// a command can change: the registers, the driver's settings.
func FuzzCtl(f *testing.F, n nic.NIC, prefix string, state func() string) {
	for _, s := range CtlSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		before := state()
		err := n.Ctl(cmd)
		if err == nil {
			return
		}
		if !strings.HasPrefix(err.Error(), prefix) {
			t.Fatalf("ctl %q: error %q does not start with %q", cmd, err, prefix)
		}
		if after := state(); after != before {
			t.Fatalf("refused ctl %q (%v) changed the state:\n%s\nwas:\n%s", cmd, err, after, before)
		}
	})
}
