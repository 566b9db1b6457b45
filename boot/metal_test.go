package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/image"
	"github.com/ether9/ether9/boot/qemu"
)

// needShimTools skips a test when gcc is missing, except under CI=true,
// where tools/test installed it.
func needShimTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and gcc is missing: %v", err)
		}
		t.Skipf("skipping: gcc is missing: %v", err)
	}
}

// needQEMU skips a test when QEMU (for nic) is missing, except under
// CI=true.
func needQEMU(t *testing.T, name string) {
	t.Helper()
	nic, err := qemu.LookupNIC(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qemu.Check(qemu.Binary, nic); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// needEIM skips a test that boots the LAPIC in x2APIC mode when QEMU
// cannot remap for it under TCG (before 9.0), except under CI=true.
func needEIM(t *testing.T) {
	t.Helper()
	if qemu.ExtendedInterrupts(qemu.Binary) {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %s has no extended interrupt mode under TCG (QEMU 9.0 or newer)", qemu.Binary)
	}
	t.Skipf("skipping: %s has no extended interrupt mode under TCG (QEMU 9.0 or newer: tools/run installs it)", qemu.Binary)
}

func TestBuildShim(t *testing.T) {
	needShimTools(t)
	root, err := image.ModuleRoot(context.Background(), ".")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "shim.elf")
	if err := buildShim(context.Background(), root, out); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shim: %d bytes", fi.Size())
}

func TestPlatformFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-platform", "metal"}, true},
		{[]string{"-platform", "linux", "-o", "x"}, true},
		{[]string{"-platform", "metal", "-o", "x"}, true},
		{[]string{"-platform", "metal", "-boot", "disk"}, true},
		{[]string{"-platform", "metal", "-boot", "both", "-selftest"}, true},
		{[]string{"-platform", "both", "-boot", "disk", "-selftest"}, true},
		{[]string{"-platform", "both", "-boot", "both", "-selftest"}, false},
		{[]string{"-platform", "both", "-o", "x"}, false},
		{[]string{"-platform", "metal", "-selftest"}, true},
		{[]string{"-platform", "metal", "-selftest", "-irq", "both"}, false},
		{[]string{"-platform", "metal", "-machine", "sim"}, false},
		{[]string{"-platform", "both", "-selftest"}, true},
		{[]string{"-platform", "both"}, false},
		{[]string{"-platform", "bsd"}, false},
	} {
		_, err := parseFlags(c.args, &strings.Builder{})
		if (err == nil) != c.ok {
			t.Errorf("%q: err = %v, want ok %v", c.args, err, c.ok)
		}
	}
}

// bootMetal boots initPkg on the shim and returns the VM and its log.
func bootMetal(t *testing.T, ctx context.Context, initPkg string, extra ...string) (*qemu.VM, *syncBuffer) {
	t.Helper()
	return bootMetalWith(t, ctx, nil, initPkg, extra...)
}

// bootMetalWith is bootMetal with QEMU's configuration changed by set.
func bootMetalWith(t *testing.T, ctx context.Context, set func(*qemu.Config), initPkg string, extra ...string) (*qemu.VM, *syncBuffer) {
	t.Helper()
	needShimTools(t)
	needQEMU(t, "e1000e")
	var log syncBuffer
	o := testOptions("e1000e", initPkg)
	o.platform = "metal"
	o.memMiB = 512
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	o.port = port
	p, err := assemble(ctx, o, &log, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.remove)
	c, err := qemuConfig(o, p)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(&c)
	}
	vm, err := qemu.Start(c, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Stop)
	return vm, &log
}

// tscBoot is the shim's clock line at boot, tscRefined its line when it
// measures the TSC again a second later.
var (
	tscBoot    = regexp.MustCompile(`^metal: TSC \d+ kHz, LAPIC timer (\d+) kHz`)
	tscRefined = regexp.MustCompile(`^metal: TSC (\d+) kHz over \d+ ms \((\d+) kHz over 1 ms at boot\)`)
)

// metalStats is the shim's counters line at power-off.
var metalStats = regexp.MustCompile(`^metal: up \d+ ms.*: \d+ system calls \((\d+) clock_gettime\)`)

// shimFailed reports a console line that says the shim gave up.
func shimFailed(s string) bool {
	return qemu.Panicked(s) || strings.Contains(s, "metal: panic") || strings.Contains(s, "killed by signal") ||
		strings.Contains(s, "fatal trap") || strings.Contains(s, "exited with status")
}

// TestBootMetalHello boots the smallest /init on the shim: the unchanged
// Go binary must print its PID and our command line (read from
// /proc/cmdline) and power the machine off.
func TestBootMetalHello(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vm, log := bootMetal(t, ctx, "./boot/testdata/hello", "ether9.test=hello")
	// Once QEMU runs, a boot takes well under a second: a minute with no
	// line is a hang.
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	l, _, err := vm.Console.Wait(wctx, 0, func(s string) bool { return strings.Contains(s, "hello: pid") }, shimFailed)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, log.String())
	}
	want := "hello: pid 1 cmdline " + image.MetalBaseCmdline + " ether9.test=hello"
	if l.Text != want {
		t.Fatalf("/init said %q, want %q", l.Text, want)
	}
	if err := vm.Wait(wctx); err != nil {
		t.Fatalf("QEMU did not exit after power-off: %v\nconsole:\n%s", err, log.String())
	}
	t.Logf("QEMU start to the shim: %v, to Go's first line: %v", lineAt(vm, "metal: shim started"), l.At.Round(time.Millisecond))
}

// TestBootMetalRefusesCPU: on a CPU without what the shim needs it says
// so and powers off: without RDRAND, before Go's crypto/rand dies naming
// /dev/urandom; without x2APIC when metal.x2apic asks for it, before the
// first x2APIC register faults.
func TestBootMetalRefusesCPU(t *testing.T) {
	for _, c := range []struct {
		name, cpu string
		words     []string
		says      string
	}{
		{"no RDRAND", "qemu64", nil, "metal: panic: this CPU has no RDRAND"},
		{"no x2APIC", "max,-x2apic", []string{"metal.x2apic"}, "metal: panic: metal.x2apic: this CPU has no x2APIC"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			vm, log := bootMetalWith(t, ctx, func(q *qemu.Config) { q.CPU = c.cpu }, "./boot/testdata/hello", c.words...)
			wctx, wcancel := context.WithTimeout(ctx, time.Minute)
			defer wcancel()
			_, _, err := vm.Console.Wait(wctx, 0, func(s string) bool { return strings.Contains(s, c.says) },
				func(s string) bool { return strings.Contains(s, "hello: pid") || qemu.Panicked(s) })
			if err != nil {
				t.Fatalf("%v\nconsole:\n%s", err, log.String())
			}
			if err := vm.Wait(wctx); err != nil {
				t.Fatalf("QEMU did not exit after power-off: %v\nconsole:\n%s", err, log.String())
			}
		})
	}
}

func lineAt(vm *qemu.VM, substr string) time.Duration {
	for _, l := range vm.Console.Lines() {
		if strings.Contains(l.Text, substr) {
			return l.At.Round(time.Millisecond)
		}
	}
	return -1
}

// TestBootMetalRuntime runs boot/testdata/metal on the shim: goroutine
// stress, timers, GC over a demand-paged heap, a recovered nil
// dereference (#PF as SIGSEGV), a spinning goroutine that only async
// preemption (SIGURG as a signal frame) can interrupt, kernel/metal
// reaching PCI, VT-d, ACPI and DMA memory, epoll's level- and
// edge-triggered reports, and a machine that halts while every goroutine
// sleeps with the console in the netpoller, and /init's own image (data
// mapped where the module lies, the zero tail filled on first touch, even
// by a system call). Each check must pass, with no
// more than 30 s between console lines.
func TestBootMetalRuntime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vm, log := bootMetal(t, ctx, "./boot/testdata/metal", "ether9.test=metal", "METAL_TEST=env")
	checks := []string{"cmdline", "goroutines", "timers", "gc", "nil", "preempt", "lapic", "clock", "refine", "platform", "msi", "epoll", "sleeps", "avx", "image"}
	from := 0
	for _, want := range append(checks, "done") {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		l, i, err := vm.Console.Wait(wctx, from, func(s string) bool {
			return strings.Contains(s, "metal-test: ok "+want) || strings.Contains(s, "metal-test: "+want) ||
				strings.Contains(s, "metal-test: FAIL")
		}, shimFailed)
		wcancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("no progress for 30 s waiting for %q: the machine hangs\nconsole:\n%s", want, log.String())
		}
		if err != nil || strings.Contains(l.Text, "FAIL") {
			t.Fatalf("%q: %v %s\nconsole:\n%s", want, err, l.Text, log.String())
		}
		t.Log(strings.TrimPrefix(l.Text, "metal-test: "))
		from = i + 1
	}
	if err := vm.Wait(ctx); err != nil {
		t.Fatalf("QEMU did not exit after power-off: %v\nconsole:\n%s", err, log.String())
	}
	t.Logf("QEMU start to Go's first line: %v, to done: %v", lineAt(vm, "metal-test: start"), lineAt(vm, "metal-test: done"))
	// The shim's counters: with the vDSO found, the runtime reads the
	// clock without system calls (without it, 3 of 4 calls are clock_gettime).
	stats, err := vm.Console.WaitMatch(ctx, metalStats)
	if err != nil {
		t.Fatalf("no counters at power-off: %v\nconsole:\n%s", err, log.String())
	}
	t.Log(stats.Text)
	checkClocks(t, vm.Console.Lines(), "the PM timer", log.String())
	m := metalStats.FindStringSubmatch(stats.Text)
	if calls, _ := strconv.Atoi(m[1]); calls > 50 {
		t.Errorf("%s clock_gettime system calls: the runtime did not use the vDSO", m[1])
	}
}

// checkClocks checks the shim's clock lines among lines, measured against
// ref. The TSC's rate, measured over 1 ms at boot and again over the
// first second: the two agree within 0.1% (a bad quick one would run
// every timer of the first second fast or slow). The LAPIC timer,
// measured over the same 1 ms: QEMU runs it at its 1 GHz bus clock over
// the divider of 16 the shim sets, 62500 kHz, and a rate measured high
// fires every timer late.
func checkClocks(t *testing.T, lines []qemu.Line, ref, console string) {
	t.Helper()
	var booted, refined bool
	for _, l := range lines {
		if b := tscBoot.FindStringSubmatch(l.Text); b != nil {
			booted = true
			t.Log(l.Text)
			if k, _ := strconv.ParseFloat(b[1], 64); k < 62500*0.995 || k > 62500*1.005 {
				t.Errorf("the LAPIC timer measured at %v kHz, more than 0.5%% off QEMU's 62500", k)
			}
			if !strings.Contains(l.Text, "against "+ref+";") {
				t.Errorf("the clocks were not measured against %s: %q", ref, l.Text)
			}
		}
		r := tscRefined.FindStringSubmatch(l.Text)
		if r == nil {
			continue
		}
		refined = true
		t.Log(l.Text)
		long, _ := strconv.ParseFloat(r[1], 64)
		quick, _ := strconv.ParseFloat(r[2], 64)
		if long <= 0 || quick < long*0.999 || quick > long*1.001 {
			t.Errorf("the TSC's rate over 1 ms at boot, %v kHz, is more than 0.1%% off the second's %v kHz", quick, long)
		}
	}
	if !booted || !refined {
		t.Errorf("the shim's clock lines: at boot %v, a second later %v (%q, %q)\nconsole:\n%s", booted, refined, tscBoot, tscRefined, console)
	}
}

// TestBootMetalHPET boots /init with metal.clock=hpet, standing in for
// firmware that turns the PM timer off: the shim must measure the TSC
// and the LAPIC timer against the HPET's main counter, at boot and over
// the first second, as well as against the PM timer.
func TestBootMetalHPET(t *testing.T) {
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vm, log := bootMetal(t, ctx, "./boot/init", "metal.clock=hpet")
	// The second measurement comes a second after boot: a minute without
	// it is a hang.
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if _, _, err := vm.Console.Wait(wctx, 0, tscRefined.MatchString, shimFailed); err != nil {
		t.Fatalf("no second measurement of the TSC: %v\nconsole:\n%s", err, log.String())
	}
	checkClocks(t, vm.Console.Lines(), "the HPET", log.String())
}

// TestSelftestMetal runs the whole self-test with /init on the shim:
// VT-d translation on, DHCP, 16 MiB each way checked by SHA-256, the
// status page with no DMAR fault, the e1000e on its MSI, and an idle
// machine that sleeps on it.
func TestSelftestMetal(t *testing.T) {
	needShimTools(t)
	needQEMU(t, "e1000e")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	o := testOptions("e1000e", "./boot/init")
	o.platform = "metal"
	r, console := mustSelftest(t, o, "")
	if !regexp.MustCompile(`irq 00:0[0-9a-f]\.0: MSI on vector \d+ \(remapped, entry \d+\)`).MatchString(console) {
		t.Errorf("the console does not say the NIC took an MSI vector through an interrupt remapping entry")
	}
	for _, d := range r.feel.idleMove {
		if d.name == "ether0 netstack.idle_waits" && d.by > maxIdleWaits {
			t.Errorf("idle, the poll loop waited %d times (at most %d): the machine does not sleep on its MSI", d.by, maxIdleWaits)
		}
	}
}

// TestSelftestMetalMSIX runs the self-test on the shim with QEMU's igb
// and two queue pairs, the LAPIC in x2APIC mode as server firmware
// leaves it (metal.x2apic stands in for that firmware): probe must give
// the NIC MSI-X, a vector for each queue pair and one for the link,
// through entries of a unit remapping in extended mode, and each queue
// that carried the transfers must have counted interrupts on its own
// vector.
func TestSelftestMetalMSIX(t *testing.T) {
	needShimTools(t)
	needQEMU(t, "igb")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	o := testOptions("igb", "./boot/init")
	o.platform = "metal"
	needEIM(t)
	o.appendTo = "ether9.queues=2 metal.x2apic"
	r, console := mustSelftest(t, o, "")
	if !regexp.MustCompile(`irq 00:0[0-9a-f]\.0: MSI-X, 3 vectors \(\d+ \d+ \d+; remapped, entries \d+ \d+ \d+\)`).MatchString(console) {
		t.Errorf("the console does not say the NIC took three MSI-X vectors, each through an interrupt remapping entry")
	}
	for _, want := range []string{"LAPIC 0 in x2APIC, by metal.x2apic", "; extended mode, to x2APIC ids"} {
		if !strings.Contains(console, want) {
			t.Errorf("the console does not say %q", want)
		}
	}
	counted := map[string]uint64{}
	for _, moved := range [][]counterDelta{r.pull.moved, r.push.moved, r.feel.reqMove} {
		for _, c := range moved {
			counted[c.name] += c.by
		}
	}
	// RSS puts a flow's receive on the queue its ports hash to and the
	// transmit on the one its hash picks, so which of the two queues
	// carry the transfers changes from boot to boot; every queue that
	// did must have been woken by its own vector.
	busy := 0
	for q := range 2 {
		frames := counted[fmt.Sprintf("ether0 q%d_rx_frames", q)] + counted[fmt.Sprintf("ether0 q%d_tx_packets", q)]
		if frames == 0 {
			continue
		}
		busy++
		if name := fmt.Sprintf("ether0 irq.vector%d", q); counted[name] == 0 {
			t.Errorf("%s did not move over the transfers: queue %d moved %d frames and its vector took no interrupt", name, q, frames)
		}
	}
	if busy == 0 {
		t.Errorf("no queue counted a frame over the transfers")
	}
}

// TestMetalConsoleRemapped boots /init on the shim behind a unit that
// remaps interrupts and blocks the compatibility format: the console's
// I/O APIC line must have moved onto an entry, or the shell never hears
// a key. The shell's answer also counts the entries in use: the
// console's and the NIC's MSI. Once with the LAPIC in xAPIC mode, once
// in x2APIC mode, where the line's entry names it by x2APIC id, twice
// with the console on COM2, and once naming a port with no UART. The
// xAPIC boot carries an EHCI controller firmware never used: the
// bring-up claims it through configuration space, decoding its
// registers for the while, and it takes no interrupt entry.
func TestMetalConsoleRemapped(t *testing.T) {
	needShimTools(t)
	needQEMU(t, "e1000e")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	for _, mode := range []struct {
		name       string
		words      []string
		says       string
		ehci       bool
		com2, spcr bool // the console on COM2; named there by an SPCR table
	}{
		// An EHCI beside the NIC, which firmware never used, is claimed
		// through configuration space with its decoding turned on
		// around it; nothing takes an interrupt of it.
		{name: "xAPIC", says: "LAPIC 0 in xAPIC", ehci: true},
		{name: "x2APIC", words: []string{"metal.x2apic"}, says: "the console line through entry 0; extended mode, to x2APIC ids"},
		// The console on COM2, IRQ 3, as IPMI serial-over-LAN often is:
		// named on the command line, or by firmware's SPCR table (there
		// through the I/O APIC line it names) with no console= at all.
		{name: "COM2 by the command line", words: []string{"console=ttyS1,57600"}, com2: true,
			says: "metal: shim started; console ttyS1 at I/O 0x2f8, 57600 baud, by the command line"},
		{name: "COM2 by SPCR", com2: true, spcr: true,
			says: "metal: shim started; console ttyS1 at I/O 0x2f8, 57600 baud, by SPCR"},
		// A port named where no UART answers is not moved to.
		{name: "ttyS2 named, none there", words: []string{"console=ttyS2"},
			says: "metal: no UART answers at ttyS2 (I/O 0x3e8), which the command line names: the console stays on ttyS0"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			if slices.Contains(mode.words, "metal.x2apic") {
				needEIM(t)
			}
			var spcr string
			if mode.spcr {
				spcr = filepath.Join(t.TempDir(), "spcr.bin")
				if err := os.WriteFile(spcr, spcrBody(0x2f8, 3, 57600), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			vm, _ := bootMetalWith(t, ctx, func(c *qemu.Config) { c.EHCI, c.COM2, c.SPCR = mode.ehci, mode.com2, spcr }, "./boot/init", mode.words...)
			for _, want := range []string{mode.says, "remaps interrupts, compatibility format blocked; the console line through entry", "shell: on the console"} {
				// A boot reaches the shell in about a second: a minute
				// without the line is a hang, not a slow host.
				wctx, wcancel := context.WithTimeout(ctx, time.Minute)
				_, _, err := vm.Console.Wait(wctx, 0, func(s string) bool { return strings.Contains(s, want) },
					func(s string) bool { return shimFailed(s) || strings.Contains(s, "interrupts not remapped") })
				wcancel()
				if err != nil {
					t.Fatalf("waiting for %q: %v\nconsole:\n%s", want, err, vm.Console.Tail(60))
				}
			}
			// The bring-up, USB hand-off included, is done by the shell.
			if mode.ehci && !strings.Contains(vm.Console.Tail(1000), ": claimed; firmware did not own it") {
				t.Errorf("no usb line claims the EHCI\nconsole:\n%s", vm.Console.Tail(60))
			}
			from := len(vm.Console.Lines())
			if _, err := io.WriteString(vm.Input, "cat /dev/iommu/stats\r"); err != nil {
				t.Fatal(err)
			}
			// The answer comes at once; a minute without it is a key
			// the console's interrupt never delivered.
			actx, acancel := context.WithTimeout(ctx, time.Minute)
			defer acancel()
			line, _, err := vm.Console.Wait(actx, from, func(s string) bool { return strings.HasPrefix(s, "irq-entries ") }, qemu.Panicked)
			if err != nil {
				t.Fatalf("the shell did not answer a key through the remapped line: %v\nconsole:\n%s", err, vm.Console.Tail(40))
			}
			if strings.TrimSpace(line.Text) != "irq-entries 2" {
				t.Errorf("%q: want the console's entry and the NIC's", line.Text)
			}
		})
	}
}

// spcrBody is the body of a Serial Port Console Redirection table (after
// the 36-byte header QEMU makes) naming a 16550 at I/O port, its
// interrupt I/O APIC line gsi, at baud (57600 or 115200).
func spcrBody(port uint16, gsi uint32, baud int) []byte {
	b := make([]byte, 44)
	b[0] = 0                   // interface type: a full 16550
	b[4], b[5], b[7] = 1, 8, 1 // GAS: system I/O, 8 bits wide, byte access
	binary.LittleEndian.PutUint64(b[8:], uint64(port))
	b[16] = 2 // interrupt type: I/O APIC
	binary.LittleEndian.PutUint32(b[18:], gsi)
	b[22] = map[int]byte{57600: 6, 115200: 7}[baud]
	b[24] = 1                                         // one stop bit
	binary.LittleEndian.PutUint32(b[28:], 0xffffffff) // not a PCI device
	return b
}

// TestMetalWithoutSerialPort boots /init on a machine with no serial
// port, as most NUCs come: nothing answers at COM1, whose line status
// register then reads all ones, as if a byte always waited. The machine
// must come up and serve over the network, and sleep when it has nothing
// to do: the shim's counters, read over HTTP from /dev/kstat, must show
// the CPU halted for at least half of the idlest of three seconds (it had
// spun on 0xff bytes for the console shell, every cycle of every second).
func TestMetalWithoutSerialPort(t *testing.T) {
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var port int
	bootMetalWith(t, ctx, func(c *qemu.Config) { c.NoSerial, port = true, c.Forward[0].Host }, "./boot/init")
	url := fmt.Sprintf("http://127.0.0.1:%d/ns/dev/kstat", port)
	// No console to watch: the machine is up when the file answers, and
	// a minute without an answer is a hang.
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	var last error
	for {
		if _, last = idleNanos(wctx, url); last == nil {
			break
		}
		if wctx.Err() != nil {
			t.Fatalf("/ns/dev/kstat never answered within a minute: %v", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	best := 0.0
	for range 3 {
		i0, err := idleNanos(ctx, url)
		t0 := time.Now()
		time.Sleep(time.Second)
		i1, err1 := idleNanos(ctx, url)
		if err != nil || err1 != nil {
			t.Fatalf("/ns/dev/kstat: %v, %v", err, err1)
		}
		best = max(best, float64(i1-i0)/float64(time.Since(t0)))
	}
	t.Logf("halted for %.0f%% of the idlest second", 100*best)
	if best < 0.5 {
		t.Errorf("halted for %.0f%% of the idlest of three seconds: the machine does not sleep without a serial port", 100*best)
	}
}

// idleNanos reads the shim's idle_ns counter from /dev/kstat at url.
func idleNanos(ctx context.Context, url string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %v %s", resp.Status, err, body)
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "idle_ns "); ok {
			return strconv.ParseUint(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no idle_ns in %q", body)
}
