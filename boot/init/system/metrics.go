package system

import (
	"bufio"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// metricsHandler serves GET /metrics in the Prometheus text exposition
// format (version 0.0.4, which every scraper accepts): the status
// snapshot's counters (which are the namespace's files), so the page,
// the files and the metrics agree by construction.
//
// The encoder is ours, forty lines that the tests check with
// prometheus/common's parser. The library's own encoder (expfmt) brings
// its protobuf metric model and an ABNF package that links testing and
// go/parser into PID 1: 20 ms of package inits under QEMU's TCG, where
// the machine has half a second to HTTP-ready, and 1.8 MB of /init.
func (s *System) metricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", metricsType)
		bw := bufio.NewWriter(w)
		for _, f := range s.metricFamilies() {
			f.writeText(bw)
		}
		bw.Flush() // an error is the client gone: nothing to tell it
	})
}

const metricsType = "text/plain; version=0.0.4; charset=utf-8"

// A metricFamily is one metric name with its help, type and samples.
type metricFamily struct {
	name, help, typ string // typ: counter, gauge or untyped
	samples         []metricSample
}

type metricSample struct {
	labels []string // name, value, name, value...
	value  float64
}

// writeText writes f as the text format does: HELP and TYPE once, then
// a line per sample. In HELP a backslash and a newline are escaped, in a
// label value the double quote as well.
func (f *metricFamily) writeText(w *bufio.Writer) {
	w.WriteString("# HELP " + f.name + " ")
	helpEscaper.WriteString(w, f.help)
	w.WriteString("\n# TYPE " + f.name + " " + f.typ + "\n")
	for _, m := range f.samples {
		w.WriteString(f.name)
		for i := 0; i+1 < len(m.labels); i += 2 {
			sep := ","
			if i == 0 {
				sep = "{"
			}
			w.WriteString(sep + m.labels[i] + `="`)
			labelEscaper.WriteString(w, m.labels[i+1])
			w.WriteString(`"`)
		}
		if len(m.labels) > 1 {
			w.WriteString("}")
		}
		w.WriteString(" " + formatSample(m.value) + "\n")
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatSample writes a value as the format spells it: +Inf, -Inf, NaN,
// else Go's shortest representation (integers below 1e21 in full).
func formatSample(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// metricFamilies is the snapshot as metric families, in the order first
// named.
func (s *System) metricFamilies() []*metricFamily {
	snap := s.Snapshot()
	var fams []*metricFamily
	byName := map[string]*metricFamily{}
	seen := map[string]bool{}
	emit := func(name, help, typ string, v float64, labels ...string) {
		name = metricName(name)
		id := name
		for i := 0; i+1 < len(labels); i += 2 {
			id += "\x00" + labels[i+1]
		}
		if seen[id] {
			return // a counter two sources name alike: the first one
		}
		seen[id] = true
		f := byName[name]
		if f == nil {
			f = &metricFamily{name: name, help: help, typ: typ}
			byName[name] = f
			fams = append(fams, f)
		}
		f.samples = append(f.samples, metricSample{labels: labels, value: v})
	}
	const (
		gauge   = "gauge"
		counter = "counter"
		untyped = "untyped"
	)
	emit("ether9_uptime_seconds", "Time since boot.", gauge, snap.Uptime.Seconds())
	if u := snap.IOMMU; u != nil {
		emit("ether9_iommu_translation", "1 when every VT-d unit translates.", gauge, b2f(u.Translation))
		emit("ether9_iommu_faults_total", "DMA remapping faults since boot.", counter, float64(u.FaultCount))
		for _, x := range u.Counters {
			emit("ether9_iommu_"+x.Name, "/dev/iommu/stats "+x.Name+".", untyped, float64(x.Value))
		}
	}
	for _, n := range snap.NICs {
		emit("ether9_nic_link_up", "1 when the link is up.", gauge, b2f(strings.HasPrefix(n.Link, "up")), "nic", n.Name)
		for _, x := range n.Counters {
			emit("ether9_nic_"+x.Name, "/net/NIC/stats "+x.Name+" (and the link endpoint's netstack.*).", untyped, float64(x.Value), "nic", n.Name)
		}
	}
	for _, x := range snap.TCP {
		emit("ether9_tcp_"+x.Name+"_total", "The stack's TCP "+x.Name+".", counter, float64(x.Value))
	}
	for _, x := range s.nsCounters("/dev/admin/refused", " ") {
		emit("ether9_admin_refused_total", "Control requests refused, by reason.", counter, float64(x.Value), "reason", x.Name)
	}
	for _, x := range s.nsCounters("/net/http/stats", " ") {
		emit("ether9_http_"+x.Name, "/net/http/stats "+x.Name+".", untyped, float64(x.Value))
	}
	return fams
}

// metricName makes a counter's name a metric name: what is not a
// letter, digit or underscore becomes an underscore.
func metricName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == ':') {
			b[i] = '_'
		}
	}
	return string(b)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
