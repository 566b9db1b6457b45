package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// What a user of the appliance feels beyond throughput: what it costs
// the host while it does nothing, how late the first frame after a quiet
// moment is answered, and how many small requests one connection gets
// through.
const (
	idleSettle  = time.Second     // after the last request, before idling is measured
	idleSpan    = 5 * time.Second // idling measured
	pingCount   = 50
	pingGap     = 100 * time.Millisecond // long enough for a polling loop to go to sleep
	requestSpan = 5 * time.Second
)

// feel is what those measurements found.
type feel struct {
	idle     time.Duration // how long idling was measured
	idleCPU  time.Duration // QEMU's CPU time over it; 0 when not measured
	idleMove []counterDelta

	ping     pingSeries
	pingMove []counterDelta

	requests  int
	reqTook   time.Duration
	reqCPU    time.Duration // QEMU's CPU time over them; 0 when not measured
	reqMove   []counterDelta
	reqFailed error // why the request loop stopped early, if it did
}

// pingSeries is the guest's report of its echo requests to the gateway.
type pingSeries struct {
	sent, received     int
	median, p99, worst time.Duration
}

// idleCores is QEMU's CPU over the idle span in host cores.
func (f feel) idleCores() float64 {
	if f.idle <= 0 {
		return 0
	}
	return f.idleCPU.Seconds() / f.idle.Seconds()
}

func (f feel) reqPerSec() float64 {
	if f.reqTook <= 0 {
		return 0
	}
	return float64(f.requests) / f.reqTook.Seconds()
}

// reqCPUms is QEMU's CPU milliseconds per request: times the request
// rate, the host cores QEMU kept busy, which says whether the guest's
// CPU or the round trip bounds the rate.
func (f feel) reqCPUms() float64 {
	if f.requests == 0 {
		return 0
	}
	return ms(f.reqCPU) / float64(f.requests)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (f feel) print(w io.Writer) {
	if f.idle > 0 {
		fmt.Fprintf(w, "selftest: idle %.1fs: qemu cpu %.3f of a host core\n", f.idle.Seconds(), f.idleCores())
		printMoved(w, f.idleMove)
	}
	if f.ping.sent > 0 {
		fmt.Fprintf(w, "selftest: ping gateway %d times %v apart: median %.3fms p99 %.3fms max %.3fms (%d answered)\n",
			f.ping.sent, pingGap, ms(f.ping.median), ms(f.ping.p99), ms(f.ping.worst), f.ping.received)
		printMoved(w, f.pingMove)
	}
	if f.reqTook > 0 {
		fmt.Fprintf(w, "selftest: 0-byte GETs on one connection: %d in %.2fs: %.0f req/s\n", f.requests, f.reqTook.Seconds(), f.reqPerSec())
		if f.reqCPU > 0 {
			fmt.Fprintf(w, "selftest:   qemu cpu %.2f ms per request, %.2f of a host core\n", f.reqCPUms(), f.reqCPU.Seconds()/f.reqTook.Seconds())
		}
		printMoved(w, f.reqMove)
	}
}

func printMoved(w io.Writer, moved []counterDelta) {
	for _, c := range moved {
		fmt.Fprintf(w, "selftest:   %s +%d\n", c.name, c.by)
	}
}

// measureFeel runs the three measurements, in this order, on a machine
// that has finished its transfers. cpu reads QEMU's CPU time; nil when
// there is no QEMU (the simulated machine) and idling is not measured.
func measureFeel(ctx context.Context, client *http.Client, base, token string, cpu func() (time.Duration, error)) (feel, error) {
	var f feel
	if cpu != nil {
		if err := f.measureIdle(ctx, client, base, cpu); err != nil {
			return f, err
		}
	}
	before, err := getStatus(ctx, client, base)
	if err != nil {
		return f, err
	}
	if f.ping, err = guestPings(ctx, client, base); err != nil {
		return f, err
	}
	after, err := getStatus(ctx, client, base)
	if err != nil {
		return f, err
	}
	f.pingMove = movedCounters(before, after)
	return f, f.measureRequests(ctx, base, token, client, cpu)
}

func (f *feel) measureIdle(ctx context.Context, client *http.Client, base string, cpu func() (time.Duration, error)) error {
	before, err := getStatus(ctx, client, base)
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, idleSettle); err != nil {
		return err
	}
	c0, err := cpu()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := sleepCtx(ctx, idleSpan); err != nil {
		return err
	}
	c1, err := cpu()
	if err != nil {
		return err
	}
	f.idle, f.idleCPU = time.Since(t0), c1-c0
	after, err := getStatus(ctx, client, base)
	if err != nil {
		return err
	}
	f.idleMove = movedCounters(before, after)
	return nil
}

// pingLine is the guest's answer to GET /debug/ping.
var pingLine = regexp.MustCompile(`sent (\d+) received (\d+) median ([0-9.]+)ms p99 ([0-9.]+)ms max ([0-9.]+)ms`)

// guestPings has the guest ping its gateway: the round trip inside the
// guest is what its driver adds, where one timed from the host would add
// the forward's own.
func guestPings(ctx context.Context, client *http.Client, base string) (pingSeries, error) {
	url := fmt.Sprintf("%s/debug/ping?n=%d&gap=%v", base, pingCount, pingGap)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return pingSeries{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return pingSeries{}, fmt.Errorf("GET /debug/ping: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if err != nil {
		return pingSeries{}, fmt.Errorf("GET /debug/ping: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return pingSeries{}, fmt.Errorf("GET /debug/ping: %s: %s", resp.Status, body)
	}
	return parsePings(string(body))
}

func parsePings(s string) (pingSeries, error) {
	m := pingLine.FindStringSubmatch(s)
	if m == nil {
		return pingSeries{}, fmt.Errorf("GET /debug/ping: cannot read %q", s)
	}
	var p pingSeries
	p.sent, _ = strconv.Atoi(m[1])
	p.received, _ = strconv.Atoi(m[2])
	for i, d := range []*time.Duration{&p.median, &p.p99, &p.worst} {
		v, err := strconv.ParseFloat(m[3+i], 64)
		if err != nil {
			return pingSeries{}, fmt.Errorf("GET /debug/ping: %q: %w", m[3+i], err)
		}
		*d = time.Duration(v * float64(time.Millisecond))
	}
	if p.received == 0 {
		return p, fmt.Errorf("GET /debug/ping: none of %d requests answered", p.sent)
	}
	return p, nil
}

// measureRequests sends 0-byte GET /source requests one after another on
// one kept-alive connection for requestSpan. Each answer must be whole
// and empty. cpu, if not nil, reads QEMU's CPU time.
func (f *feel) measureRequests(ctx context.Context, base, token string, status *http.Client, cpu func() (time.Duration, error)) error {
	before, err := getStatus(ctx, status, base)
	if err != nil {
		return err
	}
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: bearer{token: token, next: tr}, Timeout: 10 * time.Second}
	var c0 time.Duration
	if cpu != nil {
		if c0, err = cpu(); err != nil {
			return err
		}
	}
	t0 := time.Now()
	for time.Since(t0) < requestSpan {
		if err := emptyGet(ctx, client, base); err != nil {
			f.reqFailed = err
			break
		}
		f.requests++
	}
	f.reqTook = time.Since(t0)
	if cpu != nil {
		c1, err := cpu()
		if err != nil {
			return err
		}
		f.reqCPU = c1 - c0
	}
	after, err := getStatus(ctx, status, base)
	if err != nil {
		return err
	}
	f.reqMove = movedCounters(before, after)
	if f.reqFailed != nil {
		return fmt.Errorf("0-byte GETs: after %d: %w", f.requests, f.reqFailed)
	}
	return nil
}

func emptyGet(ctx context.Context, client *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/source?bytes=0", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return err
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET /source?bytes=0: %s", resp.Status)
	case n != 0:
		return fmt.Errorf("GET /source?bytes=0: %d bytes", n)
	}
	return nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
