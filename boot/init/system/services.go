package system

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/ether9/ether9/boot/init/status"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/ns"
)

// A NIC may mark a descriptor done even when its DMA faulted, so faults
// are looked for: after polls that found frames, at most every
// faultAfterWork, and else at every idle tick (System.idleTick), when the
// idle NIC loops wake too, so that an idle machine wakes at most once a
// second. Where the platform has a vector for it, the units also
// announce each fault with an interrupt, which is reported at once.
const faultAfterWork = 10 * time.Millisecond

func (s *System) startServices(ctx context.Context) {
	if len(s.IOMMUs()) > 0 {
		s.sup.Go(ctx, "iommu", s.watchFaults)
	}
	if s.stack == nil {
		return
	}
	if s.opt.NineP != "off" {
		s.sup.Go(ctx, "9p", s.serve9P)
	}
	s.sup.Go(ctx, "ntp", s.keepTime)
	s.sup.Go(ctx, "tune", s.tune)
	if s.opt.Ping {
		s.sup.Go(ctx, "ping", func(ctx context.Context) error {
			gw := s.pingTarget()
			if !gw.IsValid() && s.stack.DHCP(0) != nil {
				// The lease may come late, or never: the ping waits.
				if _, err := s.stack.WaitLease(ctx, 0); err != nil {
					return nil
				}
				gw = s.pingTarget()
			}
			if !gw.IsValid() {
				return nil
			}
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			rtt, err := Ping(ctx, s.stack.Stack, gw, time.Second)
			if err != nil {
				s.logf("ping: %v", err)
				return nil // reported; a gateway that does not answer is no reason to retry forever
			}
			s.logf("ping: first reply from %v in %.3fms", gw, float64(rtt)/float64(time.Millisecond))
			return nil
		})
	}
}

// tuneAfter is how long after the stack is up the drivers measure their
// defaults (nic.Tuner): the boot is over by then (0.3-0.5 s from QEMU's
// start under TCG) and the machine idles waiting for its DHCP lease, so
// the measurement neither delays the program nor times a busy CPU.
const tuneAfter = time.Second

// tune has every NIC whose driver measures its defaults do so, once,
// tuneAfter from the services' start.
func (s *System) tune(ctx context.Context) error {
	t := time.NewTimer(tuneAfter)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	for _, p := range s.ports {
		if tu, ok := p.NIC.(nic.Tuner); ok {
			if err := tu.Tune(); err != nil {
				s.logf("%s: tune: %v", p.NIC.Name(), err)
			}
		}
	}
	return nil
}

// pingTarget is the gateway, or else the DHCP server: QEMU's user network
// with restrict=on leaves the router out of its leases, but its server
// (10.0.2.2) is the gateway all the same.
func (s *System) pingTarget() netip.Addr {
	if gw := s.gateway(); gw.IsValid() {
		return gw
	}
	if s.stack != nil {
		if l := s.stack.Lease(0); l != nil {
			return l.Server
		}
	}
	return netip.Addr{}
}

// Handler is the system's HTTP face: the status page with its bulk-data
// and ctl endpoints and, under /ns/, every file of the namespace; with
// ether9.selftest also the profiler, so the host can see where the
// guest's time goes while it measures.
func (s *System) Handler() http.Handler {
	mux := http.NewServeMux()
	page := status.Handler(s.Snapshot, s.Ctl)
	mux.Handle("/", page)
	// Secure by default: what changes state, or makes the machine move
	// bulk data, needs the token; the page, /metrics and the namespace
	// stay readable without it.
	control := s.guard.Protect(page)
	for _, p := range []string{"/ctl", "/source", "/sink"} {
		mux.Handle(p, control)
	}
	// A stream (the packet capture) shows traffic: the token, as for
	// control; every other file is the read-only view's.
	files, streams := s.ns.ReadOnly().Handler("/ns"), s.guard.Protect(s.ns.Handler("/ns"))
	mux.Handle("/ns/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e, err := s.ns.Stat(strings.TrimPrefix(r.URL.Path, "/ns")); err == nil && e.Stream {
			streams.ServeHTTP(w, r)
			return
		}
		files.ServeHTTP(w, r)
	}))
	mux.Handle("GET /metrics", s.metricsHandler())
	if s.opt.Selftest {
		debug := http.NewServeMux()
		debug.HandleFunc("/debug/pprof/", serveProfiles)
		debug.HandleFunc("/debug/ping", s.servePingSeries)
		mux.Handle("/debug/", s.guard.Protect(debug))
	}
	return s.guard.SameOrigin(mux)
}

// Limits of the status server, so that a flood of clients, slow or many,
// costs bounded memory and goroutines and gives its connections back:
// a client gets httpHeaderTime to send its headers (then the slot goes
// to the next), httpBodyTime for the whole request and as long for the
// answer (16 MiB take 2 s at 64 Mbit/s; /source's 1 GiB needs 70
// Mbit/s), httpIdle between requests.
const (
	httpConns      = 64
	httpHeaderTime = 5 * time.Second
	httpBodyTime   = 2 * time.Minute
	httpIdle       = time.Minute
	httpHeaderSize = 16 << 10
)

// ServeStatus serves Handler on ln until ctx is done: the default
// program's work, and the simulated host's. /net/http/stats counts its
// connections.
func (s *System) ServeStatus(ctx context.Context, ln net.Listener) error {
	lim := newLimitListener(ln, httpConns)
	s.ns.Remove("/net/http/stats") // a restarted server's
	if err := s.ns.Add("/net/http/stats", ns.Text(lim.Stats)); err != nil {
		s.logf("http: %v", err)
	}
	ln = lim
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: httpHeaderTime,
		ReadTimeout:       httpBodyTime,
		WriteTimeout:      httpBodyTime,
		IdleTimeout:       httpIdle,
		MaxHeaderBytes:    httpHeaderSize,
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	where := ln.Addr().String()
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		where = fmt.Sprintf(":%d", a.Port)
	}
	s.logf("http: listening %s", where)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// servePingSeries answers GET /debug/ping?n=N&gap=D with the round trips
// of N echo requests to the gateway, D apart: how fast the idle link
// answers its first frame, measured inside the guest where the host's
// user network adds nothing.
func (s *System) servePingSeries(w http.ResponseWriter, r *http.Request) {
	n, gap, err := status.PingQuery(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	gw := s.pingTarget()
	if !gw.IsValid() {
		http.Error(w, "no gateway to ping", http.StatusServiceUnavailable)
		return
	}
	st, err := PingSeries(r.Context(), s.stack.Stack, gw, n, gap, status.PingTimeout)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fmt.Fprintf(w, "ping %v %v\n", gw, st)
}

// Go runs fn under the system's supervisor until ctx is done: a panic or
// an error is reported with its stack and fn runs again after a back-off.
func (s *System) Go(ctx context.Context, name string, fn func(ctx context.Context) error) {
	s.sup.Go(ctx, name, fn)
}

// Restarts says how often the supervisor restarted the named service.
func (s *System) Restarts(name string) int { return s.sup.Restarts(name) }

// Options are the options the system runs with.
func (s *System) Options() Options { return s.opt }

// Logf writes a console line, which /dev/kmesg keeps too.
func (s *System) Logf(format string, args ...any) { s.logf(format, args...) }

// watchFaults prints each new fault record as it is found.
func (s *System) watchFaults(ctx context.Context) error {
	watchFaults(ctx, s.remap.ReportFaults, s.work, s.faultEvents(ctx), s.idleTick(), faultAfterWork)
	return nil
}

// faultEvents gives every unit a vector of the platform for its fault
// event, one each, so that an interrupt names its unit, and returns a
// channel that has a value after each interrupt, the unit's records
// cleared; nil (no events) where the platform has no vector.
func (s *System) faultEvents(ctx context.Context) <-chan struct{} {
	if s.plat.MSI == nil {
		return nil
	}
	ev := make(chan struct{}, 1)
	for _, u := range s.IOMMUs() {
		q, err := s.plat.MSI()
		if err != nil {
			s.logf("iommu: unit %#x: fault events: %v; its faults are looked for", u.Base, err)
			continue
		}
		u.Unit.SignalFaults(q.MSIAddress(), uint32(q.MSIData()))
		s.logf("iommu: unit %#x: fault events on MSI %#x data %#x", u.Base, q.MSIAddress(), q.MSIData())
		go func() {
			defer q.Close()
			for ctx.Err() == nil {
				if !q.Wait(time.Minute) { // rarely: the interrupt is what wakes it
					continue
				}
				u.Unit.FaultEvent()
				select {
				case ev <- struct{}{}:
				default:
				}
			}
		}()
	}
	return ev
}

// watchFaults calls report at every tick, at once after a fault event,
// and after a signal on work once afterWork has passed, until ctx ends: an
// idle machine wakes once per tick, a busy one at most once per
// afterWork, however many polls signal.
func watchFaults(ctx context.Context, report func() uint64, work, events <-chan struct{}, tick netstack.IdleTick, afterWork time.Duration) {
	t := time.NewTimer(tick.Until(time.Now(), afterWork))
	defer t.Stop()
	for {
		report()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(tick.Until(time.Now(), afterWork))
		case <-events:
		case <-work:
			// Traffic: look again soon, but not at every poll.
			select {
			case <-ctx.Done():
				return
			case <-time.After(afterWork):
			}
		}
	}
}

// irqCounter is an interrupt that counts its sleeps: those it ended and
// those that timed out.
type irqCounter interface {
	Counts() (wakeups, timeouts uint64)
}

// vectorCounter is an interrupt vector that counts the interrupts that
// arrived on it.
type vectorCounter interface {
	Count() uint32
}

// platformVector is the platform's own vector under a wrapper (an
// interrupt remapping entry), which is what counts.
func platformVector(w kernel.Waiter) kernel.Waiter {
	for {
		u, ok := w.(interface{ Unwrap() kernel.MSI })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// Snapshot is the system's state for the status page.
func (s *System) Snapshot() status.Snapshot {
	snap := status.Snapshot{Uptime: s.Uptime(), Platform: s.plat.Name}
	if units := s.IOMMUs(); len(units) > 0 {
		// The counters and faults are the namespace's files, so the page
		// and /dev/iommu agree by construction.
		u := units[0].Unit
		m, _ := u.Mode()
		io := &status.IOMMU{
			Translation: true,
			Levels:      u.Levels(),
			Mode:        m.String(),
		}
		for _, x := range units {
			io.Translation = io.Translation && x.Unit.Enabled()
		}
		io.Units = s.remap.Status()
		for _, c := range s.nsCounters("/dev/iommu/stats", " ") {
			switch c.Name {
			case "faults":
				io.FaultCount = c.Value
			case "batch":
			default:
				io.Counters = append(io.Counters, c)
			}
		}
		if f, err := s.ns.ReadFile("/dev/iommu/faults"); err == nil {
			for _, l := range strings.Split(strings.TrimSpace(f), "\n") {
				if l != "" {
					io.Faults = append(io.Faults, l)
				}
			}
		}
		snap.IOMMU = io
	}
	for i, p := range s.ports {
		n := status.NIC{
			Name:   p.NIC.Name(),
			PCI:    p.Func.Addr.String(),
			ID:     fmt.Sprintf("%04x:%04x", p.Func.Vendor, p.Func.Device),
			Driver: p.Func.Driver,
			MAC:    macString(p.NIC.MAC()),
			Link:   p.NIC.Link().String(),
			IRQ:    p.irqString(),
		}
		if c, ok := platformVector(p.IRQ).(irqCounter); ok {
			woken, timeouts := c.Counts()
			n.Counters = append(n.Counters, status.Counter{Name: "irq.wakeups", Value: woken}, status.Counter{Name: "irq.timeouts", Value: timeouts})
		}
		for i, v := range p.Vectors {
			if c, ok := platformVector(v).(vectorCounter); ok {
				n.Counters = append(n.Counters, status.Counter{Name: fmt.Sprintf("irq.vector%d", i), Value: uint64(c.Count())})
			}
		}
		if s.stack != nil {
			if a, err := s.stack.GetMainNICAddress(netstack.NICID(i), ipv4.ProtocolNumber); err == nil && a.Address.Len() > 0 {
				n.Addr = a.String()
			}
			if i == 0 {
				if gw := s.gateway(); gw.IsValid() {
					n.Gateway = gw.String()
				}
			}
			if i < len(s.stack.Endpoints) {
				// The link endpoint's counters, apart from the driver's.
				for _, c := range s.stack.Endpoints[i].Stats() {
					n.Counters = append(n.Counters, status.Counter{Name: "netstack." + c.Name, Value: c.Value})
				}
			}
		}
		n.Counters = append(n.Counters, s.nsCounters("/net/"+p.NIC.Name()+"/stats", ": ")...)
		snap.NICs = append(snap.NICs, n)
	}
	if s.stack != nil {
		snap.TCP = tcpCounters(s.stack.Stats().TCP)
	}
	return snap
}

// tcpCounters are the TCP statistics that explain a transfer's speed.
func tcpCounters(t tcpip.TCPStats) []status.Counter {
	var out []status.Counter
	for _, c := range []struct {
		name string
		v    *tcpip.StatCounter
	}{
		{"segments_received", t.ValidSegmentsReceived},
		{"segments_sent", t.SegmentsSent},
		{"send_errors", t.SegmentSendErrors},
		{"retransmits", t.Retransmits},
		{"fast_retransmit", t.FastRetransmit},
		{"fast_recovery", t.FastRecovery},
		{"sack_recovery", t.SACKRecovery},
		{"tlp_recovery", t.TLPRecovery},
		{"slow_start_retransmits", t.SlowStartRetransmits},
		{"timeouts", t.Timeouts},
		{"spurious_recovery", t.SpuriousRecovery},
		{"checksum_errors", t.ChecksumErrors},
	} {
		if c.v != nil {
			out = append(out, status.Counter{Name: c.name, Value: c.v.Value()})
		}
	}
	return out
}
