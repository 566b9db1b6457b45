package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDriverFlag(t *testing.T) {
	for _, c := range []struct {
		args  []string
		modes []string // nil: refused
	}{
		{[]string{"-driver", "linux"}, []string{"off"}},
		{[]string{"-driver", "linux", "-linuxiommu", "lazy"}, []string{"lazy"}},
		{[]string{"-driver", "linux", "-linuxiommu", "off,strict"}, nil},
		{[]string{"-driver", "both", "-selftest"}, []string{"off", "strict"}},
		{[]string{"-driver", "both", "-selftest", "-linuxiommu", "strict,lazy,off"}, []string{"strict", "lazy", "off"}},
		{[]string{"-driver", "both", "-selftest", "-linuxiommu", "off,off"}, nil},
		{[]string{"-driver", "both", "-selftest", "-linuxiommu", "passthrough"}, nil},
		{[]string{"-driver", "both"}, nil},
		{[]string{"-driver", "linux", "-machine", "sim"}, nil},
		{[]string{"-driver", "linux", "-platform", "metal"}, nil},
		{[]string{"-driver", "linux", "-o", "x"}, nil},
		{[]string{"-driver", "both", "-selftest", "-irq", "both"}, nil},
		{[]string{"-driver", "bsd"}, nil},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if (err == nil) != (c.modes != nil) {
			t.Errorf("%q: err = %v, want ok %v", c.args, err, c.modes != nil)
			continue
		}
		if err == nil && !slices.Equal(o.linuxModes, c.modes) {
			t.Errorf("%q: modes %q, want %q", c.args, o.linuxModes, c.modes)
		}
	}
	if o, err := parseFlags(nil, io.Discard); err != nil || o.driver != "ether9" || o.mib != 16 {
		t.Errorf("defaults: driver %q mib %d, %v", o.driver, o.mib, err)
	}
}

func TestLinuxCmdline(t *testing.T) {
	got, err := linuxCmdline("strict", []string{"dca", "i2c-algo-bit", "igb"}, "ether9.token=x igb.debug=2")
	if err != nil {
		t.Fatal(err)
	}
	want := "console=ttyS0 panic=-1 quiet no_timer_check intel_iommu=on iommu.strict=1 ref.modules=dca,i2c-algo-bit,igb ether9.token=x igb.debug=2"
	if got != want {
		t.Errorf("cmdline\n%q, want\n%q", got, want)
	}
	for _, w := range []string{"intel_iommu=off", "iommu.strict=0", "iommu=pt", "intremap=off"} {
		if _, err := linuxCmdline("off", nil, w); err == nil {
			t.Errorf("-append %q accepted: -linuxiommu sets the IOMMU", w)
		}
	}
	if _, err := linuxCmdline("pt", nil, ""); err == nil {
		t.Error("an unknown mode accepted")
	}
}

// The reference page must show Linux's driver for the NIC and the
// IOMMU group type of the mode booted, and nothing else passes.
func TestCheckLinuxPage(t *testing.T) {
	page := "linux reference: driver igb on eth0\niommu DMA-FQ\neth0 rx_packets 12\n"
	if err := checkLinuxPage("igb", "lazy")(page); err != nil {
		t.Errorf("lazy: %v", err)
	}
	for _, c := range []struct{ nic, mode string }{{"igb", "strict"}, {"igb", "off"}, {"e1000e", "lazy"}} {
		if err := checkLinuxPage(c.nic, c.mode)(page); err == nil {
			t.Errorf("%s %s: a page of igb under DMA-FQ passed", c.nic, c.mode)
		}
	}
}

// TestReferenceBoot boots the reference /init with Linux's e1000e behind
// its strict VT-d and checks it serves the self-test's endpoints: the
// page says so, a GET /source with the token is whole and checked, one
// without it is refused. Kept to one boot and a small transfer: it is
// what keeps -driver both from rotting.
func TestReferenceBoot(t *testing.T) {
	needMachine(t, "e1000e")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var log syncBuffer
	o := testOptions("e1000e", defaultApp)
	o.driver, o.linuxModes = "linux", []string{"strict"}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	o.port = port
	if o, err = withToken(o); err != nil {
		t.Fatal(err)
	}
	vm, c := startVM(t, ctx, o, &log)
	if _, err := vm.Console.WaitMatch(ctx, lineHTTP.re); err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, log.String())
	}
	base := "http://127.0.0.1:" + strconv.Itoa(c.Forward[0].Host)
	client := &http.Client{Timeout: time.Minute, Transport: bearer{token: o.token}}
	page, err := getStatus(ctx, client, base)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, log.String())
	}
	if err := checkLinuxPage("e1000e", "strict")(page); err != nil {
		t.Fatal(err)
	}
	if _, err := pull(ctx, client, base, 1<<20); err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, log.String())
	}
	resp, err := http.Get(base + "/source?bytes=10")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /source without the token: %s, want 401", resp.Status)
	}
	after, err := getStatus(ctx, client, base)
	if err != nil {
		t.Fatal(err)
	}
	if moved := movedCounters(page, after); !slices.ContainsFunc(moved, func(d counterDelta) bool {
		return d.name == "eth0 tx_bytes" && d.by >= 1<<20
	}) {
		t.Errorf("1 MiB pulled, but the page's counters moved %v", moved)
	}
	t.Logf("reference boot's page after 1 MiB:\n%s", strings.TrimSpace(after))
}

// Rounds run every variant once, the order reversing every other round;
// a boot that fails leaves its slot empty and its error in the result.
// (igc has no QEMU model: each self-test fails at once.)
func TestRunRounds(t *testing.T) {
	o := testOptions("igc", defaultApp)
	o.rounds = 3
	var seen []string
	v := func(name string) variant {
		return variant{name, func(o *options) { seen = append(seen, name) }}
	}
	var out strings.Builder
	rs, err := runRounds(context.Background(), o, &out, []variant{v("a"), v("b"), v("c")})
	if err == nil || !strings.Contains(err.Error(), "round 2 b") {
		t.Errorf("err = %v, want every round's failure", err)
	}
	if got := strings.Join(seen, ""); got != "abccbaabc" {
		t.Errorf("order %q, want abc cba abc", got)
	}
	for i, r := range rs {
		if len(r) != 3 || r[0] != nil || r[2] != nil {
			t.Errorf("variant %d: %v, want 3 empty rounds", i, r)
		}
	}
	if !strings.Contains(out.String(), "selftest: round 2 of 3: c\n") {
		t.Errorf("no round header:\n%s", out.String())
	}
}
