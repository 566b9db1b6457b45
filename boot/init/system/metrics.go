package system

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves GET /metrics in the Prometheus text format: the
// status snapshot's counters (which are the namespace's files), so the
// page, the files and the metrics agree by construction.
func (s *System) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(snapshotCollector{s})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// snapshotCollector is unchecked (Describe sends nothing): which NICs
// and counters there are is the machine's, not known in advance.
type snapshotCollector struct{ s *System }

func (snapshotCollector) Describe(chan<- *prometheus.Desc) {}

func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	snap := s.Snapshot()
	seen := map[string]bool{}
	emit := func(name, help string, t prometheus.ValueType, v float64, labels ...string) {
		name = metricName(name)
		var keys, vals []string
		for i := 0; i+1 < len(labels); i += 2 {
			keys, vals = append(keys, labels[i]), append(vals, labels[i+1])
		}
		id := name + "\x00" + strings.Join(vals, "\x00")
		if seen[id] {
			return // a counter two sources name alike: the first one
		}
		seen[id] = true
		m, err := prometheus.NewConstMetric(prometheus.NewDesc(name, help, keys, nil), t, v, vals...)
		if err == nil {
			ch <- m
		}
	}
	emit("ether9_uptime_seconds", "Time since boot.", prometheus.GaugeValue, snap.Uptime.Seconds())
	if u := snap.IOMMU; u != nil {
		emit("ether9_iommu_translation", "1 when every VT-d unit translates.", prometheus.GaugeValue, b2f(u.Translation))
		emit("ether9_iommu_faults_total", "DMA remapping faults since boot.", prometheus.CounterValue, float64(u.FaultCount))
		for _, x := range u.Counters {
			emit("ether9_iommu_"+x.Name, "/dev/iommu/stats "+x.Name+".", prometheus.UntypedValue, float64(x.Value))
		}
	}
	for _, n := range snap.NICs {
		emit("ether9_nic_link_up", "1 when the link is up.", prometheus.GaugeValue, b2f(strings.HasPrefix(n.Link, "up")), "nic", n.Name)
		for _, x := range n.Counters {
			emit("ether9_nic_"+x.Name, "/net/NIC/stats "+x.Name+" (and the link endpoint's netstack.*).", prometheus.UntypedValue, float64(x.Value), "nic", n.Name)
		}
	}
	for _, x := range snap.TCP {
		emit("ether9_tcp_"+x.Name+"_total", "The stack's TCP "+x.Name+".", prometheus.CounterValue, float64(x.Value))
	}
	for _, x := range s.nsCounters("/dev/admin/refused", " ") {
		emit("ether9_admin_refused_total", "Control requests refused, by reason.", prometheus.CounterValue, float64(x.Value), "reason", x.Name)
	}
	for _, x := range s.nsCounters("/net/http/stats", " ") {
		emit("ether9_http_"+x.Name, "/net/http/stats "+x.Name+".", prometheus.UntypedValue, float64(x.Value))
	}
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
