package e1000e_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/nicstat"
	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/bind"
)

// The new commands and ifstats through the files a person uses: the ctl
// file takes them, refuses bad ones with the driver's error, and ifstats
// lists exactly the device's statistics registers, counting real traffic.
func TestSimCtlFiles(t *testing.T) {
	mc := newMachine(t, rigOpt{})
	defer mc.close(t)
	n := ns.New()
	if err := bind.NIC(n, mc.NIC, nil); err != nil {
		t.Fatal(err)
	}
	ifstats := func() map[string]uint64 {
		t.Helper()
		s, err := n.ReadFile("/net/ether0/ifstats")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]uint64{}
		for line := range strings.Lines(s) {
			name, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
			v, err := strconv.ParseUint(val, 10, 64)
			if !ok || err != nil {
				t.Fatalf("ifstats line %q", line)
			}
			m[name] = v
		}
		return m
	}
	before := ifstats()
	if len(before) != len(nicstat.Table()) {
		t.Errorf("ifstats has %d lines, want the %d statistics registers", len(before), len(nicstat.Table()))
	}
	for _, c := range nicstat.Table() {
		if _, ok := before[c.Name]; !ok {
			t.Errorf("ifstats lacks %s", c.Name)
		}
	}
	for _, name := range []string{"copybreak", "rx_copybreak", "rx_handoff", "tx_doorbells", "link_changes"} {
		if _, ok := before[name]; ok {
			t.Errorf("ifstats shows driver counter %s", name)
		}
	}

	stranger := mc.frame(100, 1)
	copy(stranger, []byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55})
	for _, bad := range []string{"promiscuous yes", "rxring 7", "txring 9000", "reset 1"} {
		if err := n.WriteFile("/net/ether0/ctl", bad); err == nil || !strings.Contains(err.Error(), "ether0") {
			t.Errorf("ctl %q: %v", bad, err)
		}
	}
	if got := mc.deliver(t, stranger); got != 0 {
		t.Fatal("a refused command opened the filter")
	}
	for _, cmd := range []string{"promiscuous on", "rxring 512", "txring 128", "reset"} {
		if err := n.WriteFile("/net/ether0/ctl", cmd); err != nil {
			t.Fatalf("ctl %q: %v", cmd, err)
		}
		if got := mc.deliver(t, stranger); got != 1 {
			t.Errorf("after %q: %d frames to another station", cmd, got)
		}
	}
	mc.transmit(t, 300, 2)
	after := ifstats()
	if d := after["good_packets_rx"] - before["good_packets_rx"]; d != 4 {
		t.Errorf("ifstats good_packets_rx moved by %d, want 4", d)
	}
	if d := after["good_packets_tx"] - before["good_packets_tx"]; d != 1 {
		t.Errorf("ifstats good_packets_tx moved by %d, want 1", d)
	}
}
