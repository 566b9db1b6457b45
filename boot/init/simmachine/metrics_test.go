package simmachine

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetrics: GET /metrics, without the token, parses as the Prometheus
// text format and has a metric for every counter of /net/ether0/stats,
// /dev/iommu/stats and /dev/admin/refused, agreeing with the files.
func TestMetrics(t *testing.T) {
	h, _, base := serving(t)
	send(t, "POST", base+"/ctl", "", "iommu deferred 16") // one refusal to count

	files := []string{"/net/ether0/stats", "/dev/iommu/stats"}
	read := func() map[string]map[string]uint64 {
		out := map[string]map[string]uint64{}
		for _, f := range files {
			text, err := h.System.Namespace().ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = map[string]uint64{}
			for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
				k, v, ok := strings.Cut(l, ":")
				if !ok {
					k, v, ok = strings.Cut(l, " ")
				}
				n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				if ok && err == nil && k != "faults" && k != "batch" {
					out[f][strings.TrimSpace(k)] = n // a mode is no number; faults has its own _total
				}
			}
		}
		return out
	}
	before := read()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	value := func(name, label, lv string) (float64, bool) {
		f := fams[name]
		if f == nil {
			return 0, false
		}
		for _, m := range f.GetMetric() {
			ok := label == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == lv {
					ok = true
				}
			}
			if !ok {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Untyped != nil:
				return m.Untyped.GetValue(), true
			}
		}
		return 0, false
	}
	if v, ok := value("ether9_admin_refused_total", "reason", "no_token"); !ok || v != 1 {
		t.Errorf("ether9_admin_refused_total{reason=no_token} = %v, %v; want 1", v, ok)
	}
	if v, ok := value("ether9_nic_link_up", "nic", "ether0"); !ok || v != 1 {
		t.Errorf("ether9_nic_link_up{nic=ether0} = %v, %v", v, ok)
	}
	if _, ok := value("ether9_tcp_segments_sent_total", "", ""); !ok {
		t.Error("no ether9_tcp_segments_sent_total")
	}
	// Each counter lies between its file's value read before the scrape
	// and after it (the scrape itself moves the NIC's).
	after := read()
	for _, f := range files {
		if len(before[f]) == 0 {
			t.Errorf("%s: no counters read", f)
		}
		for k, lo := range before[f] {
			prefix, label := "ether9_nic_", "nic"
			if f == "/dev/iommu/stats" {
				prefix, label = "ether9_iommu_", ""
			}
			got, ok := value(prefix+metricName(k), label, "ether0")
			hi := after[f][k]
			if !ok {
				t.Errorf("%s %s has no metric %s", f, k, prefix+metricName(k))
			} else if got < float64(min(lo, hi)) || got > float64(max(lo, hi)) {
				t.Errorf("%s %s: %d before the scrape, %d after, metric %v", f, k, lo, hi, got)
			}
		}
	}
}

func metricName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
