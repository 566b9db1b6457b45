package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/image"
	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/qemu"
	"github.com/ether9/ether9/boot/uki"
)

// needMachine skips a test when QEMU (for nic) or a kernel is missing,
// except under CI=true, where tools/test installed both and absence is a
// failure.
func needMachine(t *testing.T, nic string) {
	t.Helper()
	needQEMU(t, nic)
	needKernel(t)
}

func needKernel(t *testing.T) {
	t.Helper()
	cache, err := image.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := image.FindKernel(image.KernelSearch{Env: os.Getenv("ETHER9_KERNEL"), Cache: cache, Boot: "/boot"}); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// syncBuffer collects a console for the test log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testOptions(nic, initPkg string) options {
	return options{nic: nic, machine: "qemu", smp: 1, memMiB: 1024, timeout: 4 * time.Minute, app: initPkg}
}

// TestBootHello boots the smallest /init through the whole runner: the
// image must come up with our command line as PID 1 and power off cleanly.
func TestBootHello(t *testing.T) {
	needMachine(t, "e1000e")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log syncBuffer
	o := testOptions("e1000e", "./boot/testdata/hello")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	o.port = port
	p, err := assemble(ctx, o, &log, "ether9.test=hello")
	if err != nil {
		t.Fatal(err)
	}
	defer p.remove()
	c, err := qemuConfig(o, p)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := qemu.Start(c, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	l, err := vm.Console.WaitFor(ctx, "hello: pid")
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, log.String())
	}
	// The firmware's last words may share the line.
	want := "hello: pid 1 cmdline " + image.BaseCmdline + " ether9.test=hello"
	if !strings.HasSuffix(l.Text, want) {
		t.Fatalf("/init said %q, want %q", l.Text, want)
	}
	if err := vm.Wait(ctx); err != nil {
		t.Fatalf("QEMU did not exit cleanly after power-off: %v\nconsole:\n%s", err, log.String())
	}
	t.Logf("QEMU start to /init's first line: %.2fs (kernel %s)", l.At.Seconds(), p.boot)
}

// isMain reports whether pkg (relative to the module root) is a command.
func isMain(t *testing.T, pkg string) bool {
	root, err := image.ModuleRoot(context.Background(), ".")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.Name}}", pkg)
	cmd.Dir = root
	out, err := cmd.Output()
	return err == nil && strings.TrimSpace(string(out)) == "main"
}

// TestSelftestE1000e runs the self-test with QEMU loading the kernel, then
// through ether9.img under UEFI firmware (as a machine boots the USB
// stick), and prints the two side by side.
func TestSelftestE1000e(t *testing.T) {
	needMachine(t, "e1000e")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	boots := []bool{false}
	if diskReady(t) {
		boots = append(boots, true)
	}
	var rs [2]*report
	for i, disk := range boots {
		o := testOptions("e1000e", "./boot/init")
		o.disk, o.efiStub = disk, uki.DefaultStub
		r, console := mustSelftest(t, o, "disk "+strconv.FormatBool(disk))
		checkIRQ(t, r, console)
		checkBootLine(t, disk, r.token, console)
		rs[i] = r
	}
	if rs[1] != nil {
		var out bytes.Buffer
		printComparison(&out, "ether9.img under UEFI firmware against the kernel loaded by QEMU", [2]string{"disk", "kernel"}, rs[1:], rs[:1])
		t.Logf("\n%s", out.String())
	}
}

// TestSelftestIGB runs the self-test once on QEMU's igb (82576): its
// four queues (asked for: one CPU would give one) share one legacy
// interrupt, which must wake the small requests and let the idle machine
// sleep, as on e1000e.
func TestSelftestIGB(t *testing.T) {
	needMachine(t, "igb")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	o := testOptions("igb", "./boot/init")
	o.appendTo = "ether9.queues=4"
	r, console := mustSelftest(t, o, "")
	if !strings.Contains(console, ", 4 queues,") {
		t.Errorf("console lacks the four queues ether9.queues=4 asked for")
	}
	checkIRQ(t, r, console)
}

// mustSelftest runs the self-test with o and returns its report and the
// console; it fails t with both when the self-test fails, and logs the
// report (under label, when there is one) when it passes. That log waits
// for the test's end, so that what the caller's own checks report comes
// first: a CI log keeps a failing test's first lines, and the report
// runs to a hundred.
func mustSelftest(t *testing.T, o options, label string) (*report, string) {
	t.Helper()
	var log syncBuffer
	r, err := selftest(context.Background(), o, &log)
	var out strings.Builder
	if r != nil {
		r.print(&out)
	}
	if label != "" {
		label = " (" + label + ")"
	}
	if err != nil {
		t.Fatalf("selftest%s: FAIL: %v\n%s\nconsole:\n%s", label, err, out.String(), log.String())
	}
	t.Cleanup(func() { t.Logf("selftest%s:\n%s", label, out.String()) })
	return r, log.String()
}

// checkIRQ wants the NIC on its interrupt: the console says so, the
// pings were woken by it, and the idle machine slept. The pings go out
// 100 ms apart, past the loop's spin after traffic (ether9.spin), so each
// reply must come in on the interrupt; the 0-byte GETs follow each other
// within the spin and are mostly polled in (e1000e: 4 wake-ups for 4,319
// GETs at the 5 ms default). Polling waits at most 20 ms at a time, over
// 100 times in the idle span's 6 s; on the interrupt the loop waits a
// second at a time.
func checkIRQ(t *testing.T, r *report, console string) {
	t.Helper()
	if !strings.Contains(console, "ether0 irq: uio INTx") {
		t.Errorf("console lacks \"ether0 irq: uio INTx\"")
	}
	moved := func(ds []counterDelta, name string) uint64 {
		for _, d := range ds {
			if d.name == name {
				return d.by
			}
		}
		return 0
	}
	if n := moved(r.feel.pingMove, "ether0 irq.wakeups"); n < max(uint64(r.feel.ping.received)/2, 1) {
		t.Errorf("%d ping replies took %d interrupt wake-ups: the replies did not come in on the interrupt", r.feel.ping.received, n)
	}
	// One loop per queue: e1000e's one, igb's four, each with its
	// qN_irq_timeout counter.
	queues := uint64(0)
	for _, d := range r.feel.idleMove {
		if strings.HasPrefix(d.name, "ether0 q") && strings.HasSuffix(d.name, "_irq_timeout") {
			queues++
		}
	}
	limit := maxIdleWaits * max(queues, 1)
	if n := moved(r.feel.idleMove, "ether0 netstack.idle_waits"); n > limit {
		t.Errorf("idle for %v, the %d poll loops waited %d times (at most %d): the machine does not sleep on its interrupt",
			r.feel.idle+idleSettle, max(queues, 1), n, limit)
	}
}

// maxIdleWaits bounds one poll loop's waits over the idle span: 6 of a
// second each, plus the spin and the status pages fetched around it.
// Polling waits hundreds of times.
const maxIdleWaits = 30

func TestSelftestRefusesIGC(t *testing.T) {
	_, err := selftest(context.Background(), testOptions("igc", "./boot/init"), nil)
	if !errors.Is(err, qemu.ErrNoModel) {
		t.Fatalf("err = %v, want ErrNoModel", err)
	}
}

// TestSelftestSim runs the self-test against the simulated machine with
// each NIC family: the default program built as it is for /init, run as
// a host process on the model behind the VT-d model, no QEMU.
func TestSelftestSim(t *testing.T) {
	for _, fam := range simmachine.Families {
		t.Run(fam, func(t *testing.T) {
			var stdout, stderr syncBuffer
			o := testOptions(fam, defaultApp)
			o.machine, o.selftest, o.timeout = "sim", true, 2*time.Minute
			err := runSim(context.Background(), o, &stdout, &stderr)
			if err != nil {
				t.Fatalf("selftest: FAIL: %v\n%s%s", err, stdout.String(), stderr.String())
			}
			for _, want := range []string{"iommu faults 0", "(POST /sink) 16777216 bytes", "(GET /source) 16777216 bytes", "nic " + fam + " (simulated)",
				"ping gateway 50 times 100ms apart", "(50 answered)", "0-byte GETs on one connection"} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, stdout.String())
				}
			}
		})
	}
}

// startVM prepares o's boot and starts QEMU on it; both are undone when
// the test ends.
func startVM(t *testing.T, ctx context.Context, o options, log io.Writer, extra ...string) (*qemu.VM, qemu.Config) {
	t.Helper()
	p, c, err := prepare(ctx, o, log, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.remove)
	vm, err := qemu.Start(c, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Stop() })
	return vm, c
}
