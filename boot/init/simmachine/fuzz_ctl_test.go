package simmachine

import (
	"context"
	"strings"
	"testing"
)

// FuzzSystemCtl: POST /ctl's grammar on a running simulated machine
// (every target: iommu, machine, ether0 with the endpoint's words and
// the driver's): a command applies, or is refused with a reason and
// leaves what the namespace shows of the IOMMU and the NIC as it was.
func FuzzSystemCtl(f *testing.F) {
	for _, s := range []string{"iommu strict", "iommu deferred 16", "iommu deferred -1", "iommu clear-faults", "iommu",
		"machine poweroff", "machine reboot", "machine", "ether0 tso off", "ether0 tso on", "ether0 copybreak 0",
		"ether0 copybreak 99999", "ether0 capture on", "ether0 capture off", "ether0 capture snaplen 100",
		"ether0 gro off", "ether0 mtu 1500", "ether0 mtu 1", "ether1 tso off", "", "frob x y", "ether0", "ether0 reset"} {
		f.Add(s)
	}
	h := startQuiet(f)
	defer h.Close()
	state := func(t *testing.T) string { return controlState(t, h) }
	f.Fuzz(func(t *testing.T, cmd string) {
		before := state(t)
		err := h.System.Ctl(cmd)
		if err == nil {
			return
		}
		if strings.TrimSpace(err.Error()) == "" {
			t.Fatalf("ctl %q refused without a reason", cmd)
		}
		if after := state(t); after != before {
			t.Fatalf("refused ctl %q (%v) changed the state:\n%s\nwas:\n%s", cmd, err, after, before)
		}
	})
}

// startQuiet starts the test machine with no forward, for targets that
// call it directly.
func startQuiet(f *testing.F) *Host {
	con := &console{}
	cfg := testConfig(con)
	cfg.Listen = ""
	h, err := Start(context.Background(), cfg)
	if err != nil {
		f.Fatalf("start: %v\nconsole:\n%s", err, con.text())
	}
	return h
}

// controlState is what the namespace shows of the IOMMU and the NIC: what
// a refused control request must leave as it was.
func controlState(t testing.TB, h *Host) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/dev/iommu/ctl", "/net/ether0/ctl", "/net/ether0/link"} {
		s, err := h.System.Namespace().ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(s)
	}
	stats, err := h.System.Namespace().ReadFile("/net/ether0/stats")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(stats, "\n") {
		if strings.HasPrefix(l, "copybreak: ") {
			b.WriteString(l + "\n") // a setting, among the counters
		}
	}
	return b.String()
}
