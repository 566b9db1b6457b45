package system

import (
	"bufio"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsText: what writeText writes parses with prometheus/common's
// parser to the same names, help, types, labels and values, with help
// and label values that need every escape the format has.
func TestMetricsText(t *testing.T) {
	fams := []*metricFamily{
		{name: "ether9_nic_rx_frames", help: `frames by "nic", a \ and` + "\na newline", typ: "untyped", samples: []metricSample{
			{labels: []string{"nic", "ether0"}, value: 12},
			{labels: []string{"nic", `a"b\c` + "\nd"}, value: 1 << 53},
		}},
		{name: "ether9_uptime_seconds", help: "Time since boot.", typ: "gauge", samples: []metricSample{{value: 0.125}}},
		{name: "ether9_admin_refused_total", help: "", typ: "counter", samples: []metricSample{
			{labels: []string{"reason", "no_token", "nic", "ether1"}, value: 3},
		}},
		{name: "ether9_odd", help: "values the format spells", typ: "gauge", samples: []metricSample{
			{labels: []string{"v", "inf"}, value: math.Inf(1)},
			{labels: []string{"v", "-inf"}, value: math.Inf(-1)},
			{labels: []string{"v", "nan"}, value: math.NaN()},
			{labels: []string{"v", "big"}, value: 1e21},
		}},
	}
	var b strings.Builder
	w := bufio.NewWriter(&b)
	for _, f := range fams {
		f.writeText(w)
	}
	w.Flush()
	p := expfmt.NewTextParser(model.LegacyValidation)
	got, err := p.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, b.String())
	}
	if len(got) != len(fams) {
		t.Errorf("%d families parsed, want %d:\n%s", len(got), len(fams), b.String())
	}
	for _, f := range fams {
		g := got[f.name]
		if g == nil {
			t.Errorf("%s: missing", f.name)
			continue
		}
		if g.GetHelp() != f.help || strings.ToLower(g.GetType().String()) != f.typ {
			t.Errorf("%s: help %q type %v, want %q %s", f.name, g.GetHelp(), g.GetType(), f.help, f.typ)
		}
		if len(g.GetMetric()) != len(f.samples) {
			t.Errorf("%s: %d samples, want %d", f.name, len(g.GetMetric()), len(f.samples))
			continue
		}
		for i, m := range g.GetMetric() {
			want := f.samples[i]
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			// The parser sorts labels by name.
			if !sameLabels(labels, want.labels) {
				t.Errorf("%s sample %d: labels %q, want %q", f.name, i, labels, want.labels)
			}
			if v := sampleValue(m); v != want.value && !(math.IsNaN(v) && math.IsNaN(want.value)) {
				t.Errorf("%s sample %d: value %v, want %v", f.name, i, v, want.value)
			}
		}
	}
}

func sameLabels(a, b []string) bool {
	pairs := func(l []string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(l); i += 2 {
			m[l[i]] = l[i+1]
		}
		return m
	}
	pa, pb := pairs(a), pairs(b)
	if len(pa) != len(pb) || len(a) != len(b) {
		return false
	}
	for k, v := range pa {
		if pb[k] != v {
			return false
		}
	}
	return true
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return m.Untyped.GetValue()
}
