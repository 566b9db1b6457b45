package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/init/status"
	"github.com/ether9/ether9/boot/qemu"
)

// consoleOf returns a closed console holding lines.
func consoleOf(t *testing.T, lines ...string) *qemu.Console {
	t.Helper()
	c := qemu.NewConsole(time.Now(), nil)
	c.Read(strings.NewReader(strings.Join(lines, "\n")+"\n"), nil)
	return c
}

func TestMilestones(t *testing.T) {
	var r report
	r.times(consoleOf(t,
		"Booting from ROM..ether9: booting (kernel up 2.1s)",
		"iommu: translation on, 4-level",
		"ether9: system: netstack: ether0: dhcp: nic 1: no reply to DISCOVER",
		"http: listening :80",
	))
	if r.iommu == 0 || r.http == 0 {
		t.Errorf("milestones missed: %+v", r)
	}
	if r.dhcp != 0 {
		t.Errorf("a DHCP error counted as the DHCP milestone")
	}
	r.times(consoleOf(t, "ether0: dhcp 10.0.2.15/24 gw 10.0.2.2", "ping: first reply from 10.0.2.2 in 1.2ms"))
	if r.dhcp == 0 || r.ping == 0 {
		t.Errorf("dhcp or ping milestone missed: %+v", r)
	}
}

func TestCheckStatus(t *testing.T) {
	good := "ether9 uptime 1.000s\niommu translation on 4-level\niommu mode strict\niommu faults 0\niommu maps 10\n"
	if err := checkStatus(good); err != nil {
		t.Fatalf("good page: %v", err)
	}
	for name, page := range map[string]string{
		"faults":          strings.Replace(good, "iommu faults 0", "iommu faults 3", 1),
		"translation off": strings.Replace(good, "iommu translation on 4-level", "iommu translation off", 1),
		"no faults line":  strings.Replace(good, "iommu faults 0\n", "", 1),
		"faults 10":       strings.Replace(good, "iommu faults 0", "iommu faults 10", 1),
	} {
		if err := checkStatus(page); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMovedCounters(t *testing.T) {
	a := "ether9 uptime 1.000s\niommu faults 0\nether0 netstack.polls 10\nether0 tx_maps 5\ntcp retransmits 2\nether0 mac 52:54:00:12:34:56\n"
	b := "ether9 uptime 2.000s\niommu faults 0\nether0 netstack.polls 25\nether0 tx_maps 5\ntcp retransmits 3\ntcp timeouts 1\nether0 mac 52:54:00:12:34:56\n"
	got := movedCounters(a, b)
	want := []counterDelta{{"ether0 netstack.polls", 15}, {"tcp retransmits", 1}}
	if len(got) != len(want) {
		t.Fatalf("moved %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("moved %v, want %v", got, want)
		}
	}
}

func TestParsePings(t *testing.T) {
	p, err := parsePings("ping 10.0.2.2 sent 50 received 49 median 1.650ms p99 2.125ms max 3.000ms\n")
	want := pingSeries{sent: 50, received: 49, median: 1650 * time.Microsecond, p99: 2125 * time.Microsecond, worst: 3 * time.Millisecond}
	if err != nil || p != want {
		t.Fatalf("parsePings = %+v, %v; want %+v", p, err, want)
	}
	for _, bad := range []string{
		"",
		"ping: no gateway to ping",
		"ping 10.0.2.2 sent 50 received 0 median 0.000ms p99 0.000ms max 0.000ms",
	} {
		if _, err := parsePings(bad); err == nil {
			t.Errorf("parsePings(%q) took it", bad)
		}
	}
}

func TestPrintComparison(t *testing.T) {
	irq := &report{nic: "e1000e", pull: transfer{bytes: 1e6, took: time.Second},
		feel: feel{idle: 5 * time.Second, idleCPU: 100 * time.Millisecond, ping: pingSeries{median: 2 * time.Millisecond}}}
	poll := &report{nic: "e1000e", pull: transfer{bytes: 2e6, took: time.Second},
		feel: feel{idle: 5 * time.Second, idleCPU: time.Second, ping: pingSeries{median: 20 * time.Millisecond}}}
	var out strings.Builder
	slow := &report{nic: "e1000e", pull: transfer{bytes: 1e6, took: 2 * time.Second}}
	printComparison(&out, "interrupt against polling", [2]string{"irq", "polling"}, []*report{irq, irq, nil}, []*report{poll, slow, poll})
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`e1000e, interrupt against polling, 3 rounds`),
		regexp.MustCompile(`pull Mbit/s \(GET /source\) +8\.0 8\.0 +16\.0 4\.0 +0\.50 2\.00 +1\.25`),
		regexp.MustCompile(`idle qemu cpu, host cores +0\.020 0\.020 +0\.200 0\.000 +0\.10 - +0\.10`),
		regexp.MustCompile(`0-byte GETs req/s +0 0 +0 0 +- - +-\s`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("comparison lacks %v:\n%s", want, out.String())
		}
	}
}

func TestTransferPerPacket(t *testing.T) {
	tr := transfer{bytes: 2e6, cpu: 300 * time.Millisecond, moved: []counterDelta{
		{"ether0 netstack.tx_packets", 200}, {"ether0 tx_maps", 50}, {"ether0 tx_doorbells", 20}, {"ether1 tx_maps", 999},
	}}
	if got := tr.cpuPerMB(); got != 150 {
		t.Errorf("cpuPerMB = %v, want 150", got)
	}
	want := "per netstack.tx_packets (200): tx_maps 0.250 tx_doorbells 0.100 irq.wakeups 0.000 netstack.idle_waits 0.000 netstack.polls 0.000"
	if got := tr.perPacket("netstack.tx_packets"); got != want {
		t.Errorf("perPacket =\n%q, want\n%q", got, want)
	}
	if got := tr.perPacket("netstack.rx_packets"); got != "" {
		t.Errorf("perPacket with no packets = %q", got)
	}
}

// spoiltBlocks names the MiB blocks whose hashes disagree: the one a
// flipped byte spoils, or every one from a lost byte on.
func TestSpoiltBlocks(t *testing.T) {
	data := make([]byte, 3*status.SinkBlock+100)
	status.Pattern(7, data)
	same := strings.Join(status.BlockSums(data), ",")
	flipped := bytes.Clone(data)
	flipped[status.SinkBlock+5] ^= 1
	lost := append(bytes.Clone(data[:2*status.SinkBlock+9]), data[2*status.SinkBlock+10:]...)
	for _, c := range []struct {
		name, header, want string
	}{
		{"none", same, "every MiB block agrees"},
		{"flipped", strings.Join(status.BlockSums(flipped), ","), "MiB blocks that differ: 1 of 4"},
		{"lost", strings.Join(status.BlockSums(lost), ","), "MiB blocks that differ: 2 3 of 4"},
		{"no header", "", "no block hashes from the guest"},
	} {
		if got := spoiltBlocks(data, c.header); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The -ctl lines go to /ctl once, in one body, and a refusal fails.
func TestApplyCtl(t *testing.T) {
	var bodies []string
	code := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+string(b))
		w.WriteHeader(code)
		io.WriteString(w, "ctl: nope")
	}))
	defer srv.Close()
	r := &report{ctl: []string{"ether0 csum audit on", "ether0 build on"}}
	if err := r.applyCtl(context.Background(), srv.Client(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if want := []string{"POST /ctl ether0 csum audit on\nether0 build on"}; !slices.Equal(bodies, want) {
		t.Errorf("posted %q, want %q", bodies, want)
	}
	code = http.StatusBadRequest
	if err := r.applyCtl(context.Background(), srv.Client(), srv.URL); err == nil || !strings.Contains(err.Error(), "ctl: nope") {
		t.Errorf("a refused line: %v", err)
	}
	bodies = nil
	if err := (&report{}).applyCtl(context.Background(), srv.Client(), srv.URL); err != nil || bodies != nil {
		t.Errorf("no lines: %v, posted %q", err, bodies)
	}
}
