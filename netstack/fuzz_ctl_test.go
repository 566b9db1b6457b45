package netstack_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/ether9/ether9/netstack"
)

// FuzzEndpointCtl: the endpoint's ctl words (gro, capture) apply or are
// refused naming the interface, a refused one leaving the settings and
// the capture as they were; other words go to the driver. A reader open
// across inputs must see its stream keep to the state.
func FuzzEndpointCtl(f *testing.F) {
	for _, s := range []string{"gro on", "gro off", "gro", "gro maybe", "capture on", "capture off", "capture",
		"capture snaplen 128", "capture snaplen 63", "capture snaplen 65537", "capture snaplen x", "capture on off",
		"capture snaplen", "mtu 1500", "", "capture  on", "gro\ton"} {
		f.Add(s)
	}
	ep, err := netstack.New(newFakeNIC("ether0", 1), netstack.Options{Manual: true})
	if err != nil {
		f.Fatal(err)
	}
	defer ep.Close()
	state := func() string {
		frames, dropped, readers := ep.Capture().Stats()
		return fmt.Sprintf("%s%v %d %d %d", ep.CtlState(), ep.Capture().On(), frames, dropped, readers)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		before := state()
		err := ep.Ctl(cmd)
		if ep.Capture().On() {
			// A stream opens while on, and a reader closes cleanly.
			r, oerr := ep.Capture().Open(netip.AddrPort{}, netip.AddrPort{})
			if oerr != nil {
				t.Fatalf("capture on but open: %v", oerr)
			}
			r.Close()
		}
		if err == nil {
			return
		}
		if !strings.HasPrefix(err.Error(), "netstack: ether0") && !strings.HasPrefix(err.Error(), "ether0") {
			t.Fatalf("ctl %q: error %q does not name the interface", cmd, err)
		}
		if after := state(); after != before {
			t.Fatalf("refused ctl %q (%v) changed the state:\n%s\nwas:\n%s", cmd, err, after, before)
		}
	})
}
