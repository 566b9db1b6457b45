package system

import (
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// metricsHandler serves GET /metrics in the Prometheus exposition format
// the scraper asks for (text unless it says otherwise): the status
// snapshot's counters (which are the namespace's files), so the page,
// the files and the metrics agree by construction.
//
// The families go straight to the format's own encoder (expfmt) rather
// than through client_golang's registry: that package's init registers
// a default registry with Go and process collectors, and with what it
// pulls in (procfs, runtime/metrics, expvar) it cost 25 of /init's 138
// ms of package inits in QEMU TCG on the shim, where HTTP-ready has a
// half-second budget; /init is 1 MB smaller without it.
func (s *System) metricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format := expfmt.Negotiate(r.Header)
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, f := range s.metricFamilies() {
			if err := enc.Encode(f); err != nil {
				return // the client went away; nothing to tell it
			}
		}
		if c, ok := enc.(expfmt.Closer); ok {
			c.Close()
		}
	})
}

// metricFamilies is the snapshot as metric families, in the order first
// named.
func (s *System) metricFamilies() []*dto.MetricFamily {
	snap := s.Snapshot()
	var fams []*dto.MetricFamily
	byName := map[string]*dto.MetricFamily{}
	seen := map[string]bool{}
	emit := func(name, help string, t dto.MetricType, v float64, labels ...string) {
		name = metricName(name)
		m := &dto.Metric{}
		id := name
		for i := 0; i+1 < len(labels); i += 2 {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
			id += "\x00" + labels[i+1]
		}
		if seen[id] {
			return // a counter two sources name alike: the first one
		}
		seen[id] = true
		switch t {
		case dto.MetricType_COUNTER:
			m.Counter = &dto.Counter{Value: proto.Float64(v)}
		case dto.MetricType_GAUGE:
			m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		default:
			m.Untyped = &dto.Untyped{Value: proto.Float64(v)}
		}
		f := byName[name]
		if f == nil {
			f = &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: t.Enum()}
			byName[name] = f
			fams = append(fams, f)
		}
		f.Metric = append(f.Metric, m)
	}
	const (
		gauge   = dto.MetricType_GAUGE
		counter = dto.MetricType_COUNTER
		untyped = dto.MetricType_UNTYPED
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
