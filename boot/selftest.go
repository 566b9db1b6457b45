package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ether9/ether9/boot/init/status"
	"github.com/ether9/ether9/boot/qemu"
)

// milestone is a console line /init prints when it reaches a stage.
type milestone struct {
	name string
	re   *regexp.Regexp
}

// The milestones the self-test waits for and times. The DHCP one wants the
// address, so that an error about DHCP does not count as reaching it.
var (
	lineIOMMU = milestone{"iommu: translation on", regexp.MustCompile(`iommu: translation on`)}
	lineHTTP  = milestone{"http: listening", regexp.MustCompile(`http: listening`)}
	lineDHCP  = milestone{"ether0: dhcp", regexp.MustCompile(`ether0: dhcp \d`)}
	linePing  = milestone{"ping: first reply", regexp.MustCompile(`ping: first reply`)}
)

// defaultTransfer is how much the self-test moves each way unless told
// (-mib).
const defaultTransfer = 16 << 20

// report is what the self-test measured. Durations count from QEMU's start.
type report struct {
	token  string // the machine's ether9.token
	nic    string
	driver string // who drives it, when not ether9
	origin string // what the times count from
	iommu  time.Duration
	http   time.Duration
	dhcp   time.Duration
	ping   time.Duration // 0: no reply line seen
	phases []phase       // the boot's stages, as far as the console showed them
	pull   transfer
	push   transfer
	faults string
	feel   feel
	// cpu reads QEMU's CPU time; nil on the simulated machine.
	cpu func() (time.Duration, error)
	// outside describes what surrounds the guest (the simulated NIC's
	// rings, the peer's TCP) for a stalled transfer's report; nil in
	// QEMU, whose user network cannot be asked.
	outside func(context.Context) (string, error)
	// bytes is how much moves each way (-mib).
	bytes int64
	// checkPage judges a status page: checkStatus (ether9's VT-d is
	// translating, no faults), or the reference boot's own check.
	checkPage func(page string) error
	// ctl is POSTed to /ctl before the transfers (-ctl).
	ctl []string
}

type transfer struct {
	bytes int64
	took  time.Duration
	cpu   time.Duration // QEMU's CPU time over it; 0 when not measured
	// moved is how the guest's counters (status page) changed over the
	// transfer: polls, waits, ring-full events, retransmissions.
	moved []counterDelta
}

// counterDelta is one status page counter's change.
type counterDelta struct {
	name string
	by   uint64
}

// cpuPerMB is QEMU's CPU milliseconds per MB moved.
func (t transfer) cpuPerMB() float64 {
	if t.bytes <= 0 {
		return 0
	}
	return ms(t.cpu) / (float64(t.bytes) / 1e6)
}

// perPacketCounters are the counters that explain a transfer's cost,
// given per packet the stack handed over or received (which to count by
// is the transfer's direction): IOMMU maps, tail writes, interrupt
// wake-ups and polls.
var perPacketCounters = []string{"tx_maps", "tx_doorbells", "irq.wakeups", "netstack.idle_waits", "netstack.polls"}

// perPacket formats perPacketCounters of the first NIC per packet, where
// packets is the name of the counter of packets moved.
func (t transfer) perPacket(packets string) string {
	moved := map[string]uint64{}
	for _, c := range t.moved {
		moved[c.name] = c.by
	}
	n := moved["ether0 "+packets]
	if n == 0 {
		return ""
	}
	var b strings.Builder
	for _, name := range perPacketCounters {
		fmt.Fprintf(&b, " %s %.3f", name, float64(moved["ether0 "+name])/float64(n))
	}
	return fmt.Sprintf("per %s (%d):%s", packets, n, b.String())
}

func (t transfer) mbitps() float64 {
	if t.took <= 0 {
		return 0
	}
	return float64(t.bytes) * 8 / t.took.Seconds() / 1e6
}

func (r *report) print(w io.Writer) {
	secs := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3fs", d.Seconds())
	}
	if r.driver != "" {
		fmt.Fprintf(w, "selftest: nic %s (%s)\n", r.nic, r.driver)
	} else {
		fmt.Fprintf(w, "selftest: nic %s\n", r.nic)
	}
	for _, l := range r.ctl {
		fmt.Fprintf(w, "selftest: ctl %s\n", l)
	}
	for _, m := range []struct {
		line milestone
		at   time.Duration
	}{{lineIOMMU, r.iommu}, {lineHTTP, r.http}, {lineDHCP, r.dhcp}, {linePing, r.ping}} {
		fmt.Fprintf(w, "selftest: %s to %q %s\n", r.origin, m.line.name, secs(m.at))
	}
	printPhases(w, r.origin, r.phases)
	for _, t := range []struct {
		dir, packets string
		t            transfer
	}{{"guest to host (GET /source)", "netstack.tx_packets", r.pull}, {"host to guest (POST /sink)", "netstack.rx_packets", r.push}} {
		if t.t.bytes > 0 {
			fmt.Fprintf(w, "selftest: tcp %s %d bytes in %.2fs: %.1f Mbit/s\n", t.dir, t.t.bytes, t.t.took.Seconds(), t.t.mbitps())
			if t.t.cpu > 0 {
				fmt.Fprintf(w, "selftest:   qemu cpu %.1f ms per MB\n", t.t.cpuPerMB())
			}
			if pp := t.t.perPacket(t.packets); pp != "" {
				fmt.Fprintf(w, "selftest:   %s\n", pp)
			}
			for _, c := range t.t.moved {
				fmt.Fprintf(w, "selftest:   %s +%d\n", c.name, c.by)
			}
		}
	}
	r.feel.print(w)
	if r.faults != "" {
		fmt.Fprintf(w, "selftest: status %s\n", r.faults)
	}
}

// selftest boots the image, waits for it to come up, checks the status
// page and moves data both ways through the forward.
func selftest(ctx context.Context, o options, console io.Writer) (*report, error) {
	if !o.portSet {
		o.port = 0 // a free one, not the default
	}
	o, err := withToken(o)
	if err != nil {
		return nil, err
	}
	extra := []string{"ether9.selftest"}
	if o.irq == "off" {
		extra = append(extra, "ether9.irq=off")
	}
	wait := []milestone{lineHTTP, lineIOMMU, lineDHCP}
	check := checkStatus
	var driver string
	if o.driver == "linux" {
		// Linux's driver: its /init prints no VT-d or DHCP line (the
		// address is static) and its page has its own facts.
		extra, wait = nil, []milestone{lineHTTP}
		check = checkLinuxPage(o.nic, o.linuxModes[0])
		driver = "Linux's own driver, iommu " + o.linuxModes[0]
	}
	p, c, err := prepare(ctx, o, console, extra...)
	if err != nil {
		return nil, err
	}
	defer p.remove()
	// The time limit starts with the machine: building /init on a busy
	// host is slow but not the machine's fault.
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	vm, err := qemu.Start(c, console)
	if err != nil {
		return nil, err
	}
	defer vm.Stop()
	r := &report{nic: o.nic, driver: driver, origin: "qemu start", cpu: vm.CPUTime, token: o.token,
		bytes: int64(o.mib) << 20, checkPage: check, ctl: o.ctl}
	if o.platform == "metal" {
		var stop context.CancelFunc
		ctx, stop = watchShim(ctx, vm.Console)
		defer stop()
	}
	err = r.run(ctx, vm.Console, fmt.Sprintf("http://127.0.0.1:%d", c.Forward[0].Host), wait...)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errShimGaveUp) {
		err = fmt.Errorf("%w\nlast console lines:\n%s", cause, vm.Console.Tail(15))
	}
	if err != nil && o.platform == "metal" {
		err = fmt.Errorf("%w\n%s", err, shimState(vm))
	}
	return r, err
}

// errShimGaveUp says the shim stopped the machine: it panics or takes a
// fatal trap with the reason on the console, then halts where it cannot
// power off.
var errShimGaveUp = errors.New("the shim gave up")

// watchShim returns ctx cancelled, with errShimGaveUp as its cause, as
// soon as the console shows the shim giving up, so that a self-test
// stops at once rather than at its time limit; stop ends the watch.
func watchShim(ctx context.Context, con *qemu.Console) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	gaveUp := func(s string) bool {
		return strings.Contains(s, "metal: panic") || strings.Contains(s, "metal: fatal trap")
	}
	go func() {
		if l, _, err := con.Wait(ctx, 0, gaveUp, nil); err == nil {
			cancel(fmt.Errorf("%w: %s", errShimGaveUp, l.Text))
		}
	}()
	return ctx, func() { cancel(nil) }
}

// shimState asks the shim for its state (Ctrl-\ on the console: every
// thread and what it waits for, the timer, the file descriptors) and
// returns those lines, for a failure's report.
func shimState(vm *qemu.VM) string {
	from := len(vm.Console.Lines())
	if _, err := io.WriteString(vm.Input, "\x1c"); err != nil {
		return fmt.Sprintf("the shim's state: %v", err)
	}
	// The dump is written at once, from the UART's interrupt; a second
	// is plenty, and nothing may wait longer on a machine that failed.
	time.Sleep(time.Second)
	var b strings.Builder
	b.WriteString("the shim's state:\n")
	for _, l := range vm.Console.Lines()[from:] {
		if strings.HasPrefix(l.Text, "metal:") {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}

// run checks a booted machine whose console is con and whose HTTP port is
// forwarded to base, once the console has shown every line of wait. On
// failure the error carries the console's tail.
func (r *report) run(ctx context.Context, con *qemu.Console, base string, wait ...milestone) error {
	err := r.check(ctx, con, base, wait)
	r.times(con)
	if err != nil {
		return fmt.Errorf("%w\nlast console lines:\n%s", err, con.Tail(15))
	}
	return nil
}

// times fills in when each milestone line appeared, as far as it did.
func (r *report) times(con *qemu.Console) {
	r.phases = phasesOf(con.Lines())
	for _, l := range con.Lines() {
		for _, m := range []struct {
			line milestone
			at   *time.Duration
		}{{lineIOMMU, &r.iommu}, {lineHTTP, &r.http}, {lineDHCP, &r.dhcp}, {linePing, &r.ping}} {
			if *m.at == 0 && m.line.re.MatchString(l.Text) {
				*m.at = l.At
			}
		}
	}
}

func (r *report) check(ctx context.Context, con *qemu.Console, base string, wait []milestone) error {
	for _, m := range wait {
		if _, err := con.WaitMatch(ctx, m.re); err != nil {
			return err
		}
	}

	client := &http.Client{Timeout: 2 * time.Minute, Transport: bearer{token: r.token}}
	page, err := getStatus(ctx, client, base)
	if err != nil {
		return err
	}
	if r.checkPage == nil {
		r.checkPage = checkStatus
	}
	if r.bytes == 0 {
		r.bytes = defaultTransfer
	}
	if err := r.checkPage(page); err != nil {
		return err
	}
	if err := r.applyCtl(ctx, client, base); err != nil {
		return err
	}

	if r.pull, err = r.timed(func() (transfer, error) { return pull(ctx, client, base, r.bytes) }); err != nil {
		return fmt.Errorf("%w\n%s", err, r.diagnose(ctx, base, page))
	}
	after, err := getStatus(ctx, client, base)
	if err != nil {
		return err
	}
	r.pull.moved = movedCounters(page, after)
	if r.push, err = r.timed(func() (transfer, error) { return push(ctx, client, base, r.bytes) }); err != nil {
		return fmt.Errorf("%w\n%s", err, r.diagnose(ctx, base, after))
	}
	before := after

	// The ping runs beside the rest; it has had plenty of time by now,
	// and its absence is reported, not a failure.
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	con.WaitMatch(pctx, linePing.re)
	pcancel()

	// After the traffic: still no faults, still translating.
	page, err = getStatus(ctx, client, base)
	if err != nil {
		return err
	}
	r.push.moved = movedCounters(before, page)
	if err := r.checkPage(page); err != nil {
		return err
	}

	if r.feel, err = measureFeel(ctx, client, base, r.token, r.cpu); err != nil {
		return err
	}
	if page, err = getStatus(ctx, client, base); err != nil {
		return err
	}
	r.faults = faultLine(page)
	return r.checkPage(page)
}

// timed runs a transfer and adds QEMU's CPU time over it, when there is
// a QEMU to read it from.
func (r *report) timed(move func() (transfer, error)) (transfer, error) {
	var c0 time.Duration
	if r.cpu != nil {
		var err error
		if c0, err = r.cpu(); err != nil {
			return transfer{}, err
		}
	}
	t, err := move()
	if err != nil || r.cpu == nil {
		return t, err
	}
	c1, err := r.cpu()
	if err != nil {
		return t, err
	}
	t.cpu = c1 - c0
	return t, nil
}

// statusCounters reads the status page lines that end in a number as
// counters named by the rest of the line ("ether0 netstack.polls 12").
func statusCounters(page string) map[string]uint64 {
	m := make(map[string]uint64)
	for _, l := range strings.Split(page, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[len(f)-1], 10, 64); err == nil {
			m[strings.Join(f[:len(f)-1], " ")] = v
		}
	}
	return m
}

// movedCounters lists the counters that grew from page a to page b, in
// name order; the uptime and the pages' own requests aside, that is what
// the guest did over the transfer.
func movedCounters(a, b string) []counterDelta {
	before, after := statusCounters(a), statusCounters(b)
	var out []counterDelta
	for name, v := range after {
		if old, ok := before[name]; ok && v > old {
			out = append(out, counterDelta{name, v - old})
		}
	}
	slices.SortFunc(out, func(x, y counterDelta) int { return strings.Compare(x.name, y.name) })
	return out
}

// getStatus fetches the status page, retrying while the forward is not
// yet connected to a listening guest (user networking accepts the host's
// connection first and resets it when the guest does not answer).
func getStatus(ctx context.Context, client *http.Client, base string) (string, error) {
	var last error
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		req, err := http.NewRequestWithContext(ctx, "GET", base+"/", nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case rerr != nil:
				err = rerr
			case resp.StatusCode != http.StatusOK:
				return "", fmt.Errorf("status page: %s", resp.Status)
			default:
				return string(body), nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("status page: %w (last error: %v)", ctx.Err(), last)
		case <-time.After(delay):
		}
	}
}

// checkStatus wants translation on and zero DMAR faults on the page.
func checkStatus(page string) error {
	if !hasLine(page, "iommu translation on") {
		return fmt.Errorf("status page does not say \"iommu translation on\":\n%s", page)
	}
	if f := faultLine(page); f != "iommu faults 0" {
		if f == "" {
			return fmt.Errorf("status page has no \"iommu faults\" line:\n%s", page)
		}
		return fmt.Errorf("DMAR faults: %q", f)
	}
	return nil
}

func hasLine(page, prefix string) bool {
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func faultLine(page string) string {
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "iommu faults ") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// pull fetches n bytes of the guest's /source stream and checks them
// against both the guest's SHA-256 trailer and the stream's definition.
func pull(ctx context.Context, client *http.Client, base string, n int64) (transfer, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/source?bytes="+strconv.FormatInt(n, 10), nil)
	if err != nil {
		return transfer{}, err
	}
	p := &progress{}
	ctx, stop := watchStall(ctx, p, stallLimit)
	defer stop()
	req = req.WithContext(ctx)
	t := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return transfer{}, stallCause(ctx, fmt.Errorf("GET /source: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return transfer{}, fmt.Errorf("GET /source: %s", resp.Status)
	}
	got := sha256.New()
	p.r = resp.Body
	m, err := io.Copy(got, p)
	took := time.Since(t)
	if err != nil {
		return transfer{}, stallCause(ctx, fmt.Errorf("GET /source: after %d bytes: %w", m, err))
	}
	if m != n {
		return transfer{}, fmt.Errorf("GET /source: %d bytes, want %d", m, n)
	}
	sum := hex.EncodeToString(got.Sum(nil))
	if tr := resp.Trailer.Get("X-Sha256"); tr != sum {
		return transfer{}, fmt.Errorf("GET /source: SHA-256 %s, the guest sent %q", sum, tr)
	}
	if want := patternSum(n); sum != want {
		return transfer{}, fmt.Errorf("GET /source: SHA-256 %s, the pattern's is %s", sum, want)
	}
	return transfer{bytes: n, took: took}, nil
}

func patternSum(n int64) string {
	h := sha256.New()
	buf := make([]byte, 64<<10)
	for off := int64(0); off < n; {
		b := buf[:min(int64(len(buf)), n-off)]
		status.Pattern(off, b)
		h.Write(b)
		off += int64(len(b))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// spoiltBlocks says which of the SinkBlock-sized blocks of data the
// guest's block hashes (X-Sha256-Blocks) disagree with: one block spoilt
// points at a buffer overwritten, everything from a point on at bytes
// lost or out of order.
func spoiltBlocks(data []byte, header string) string {
	if header == "" {
		return "no block hashes from the guest"
	}
	got, want := strings.Split(header, ","), status.BlockSums(data)
	var bad []string
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			bad = append(bad, strconv.Itoa(i))
		}
	}
	if len(bad) == 0 {
		return "every MiB block agrees"
	}
	return fmt.Sprintf("MiB blocks that differ: %s of %d", strings.Join(bad, " "), len(want))
}

// applyCtl POSTs the -ctl lines, if any, in one body: the self-test
// fails if the guest refuses one.
func (r *report) applyCtl(ctx context.Context, client *http.Client, base string) error {
	if len(r.ctl) == 0 {
		return nil
	}
	body := strings.Join(r.ctl, "\n")
	code, answer, err := postCtl(ctx, client, base, body)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("POST /ctl %q: %d: %s", body, code, answer)
	}
	return nil
}

// postCtl sends body to the guest's /ctl, which applies its lines in
// order up to the first it refuses, and returns the answer's status and
// text.
func postCtl(ctx context.Context, client *http.Client, base, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/ctl", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("POST /ctl: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, strings.TrimSpace(string(answer)), nil
}

// push sends n bytes of the Words stream to the guest's /sink and
// compares the SHA-256 it answers with ours.
func push(ctx context.Context, client *http.Client, base string, n int64) (transfer, error) {
	// The Words stream, so that a spoilt body's damage can be told: the
	// guest says which words differ and whose bytes they hold.
	data := make([]byte, n)
	status.Words(0, data)
	want := sha256.Sum256(data)
	// The watch counts what the transport takes of the body; once it has
	// all, the answer is due within the same limit.
	p := &progress{r: bytes.NewReader(data)}
	ctx, stop := watchStall(ctx, p, stallLimit)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/sink?words=1", p)
	if err != nil {
		return transfer{}, err
	}
	req.ContentLength = n
	req.Header.Set("Content-Type", "application/octet-stream")
	t := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return transfer{}, stallCause(ctx, fmt.Errorf("POST /sink: %w", err))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	took := time.Since(t)
	if err != nil {
		return transfer{}, stallCause(ctx, fmt.Errorf("POST /sink: reading the answer: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		return transfer{}, fmt.Errorf("POST /sink: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if got := strings.TrimSpace(string(body)); got != hex.EncodeToString(want[:]) {
		return transfer{}, fmt.Errorf("POST /sink: the guest's SHA-256 is %q, ours %x (%s bytes arrived; %s; damage: %s)",
			got, want, resp.Header.Get("X-Bytes"), spoiltBlocks(data, resp.Header.Get("X-Sha256-Blocks")), resp.Header.Get("X-Damage"))
	}
	return transfer{bytes: n, took: took}, nil
}
