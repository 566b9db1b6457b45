package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ether9/ether9"
	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/qemu"
)

// simMachine is a program running on the simulated machine: the -app
// binary, the same that would be /init, started as a host process with
// the machine described in its environment (ether9.SimEnv).
type simMachine struct {
	cmd  *exec.Cmd
	dir  string
	done chan error // the process's exit
}

// simulate builds the program and starts it on the simulated machine
// with -nic's family, its console lines going to a Console that starts
// now, and the host's 127.0.0.1:port forwarded to its HTTP port (and -9p
// to its 9P port).
func simulate(ctx context.Context, o options, echo io.Writer, log io.Writer) (*simMachine, *qemu.Console, error) {
	nics := strings.Split(o.nic, ",")
	for _, n := range nics {
		if !slices.Contains(simmachine.Families, n) {
			return nil, nil, fmt.Errorf("-machine sim: no simulated %s model (have %s)", n, strings.Join(simmachine.Families, ", "))
		}
	}
	dir, err := os.MkdirTemp("", "ether9-sim-")
	if err != nil {
		return nil, nil, fmt.Errorf("scratch directory: %w", err)
	}
	bin := filepath.Join(dir, "init")
	t := time.Now()
	if err := buildApp(ctx, o.app, bin); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	fmt.Fprintf(log, "boot: %s built (%.1fs)\n", o.app, time.Since(t).Seconds())
	forward := map[string]uint16{fmt.Sprintf("127.0.0.1:%d", o.port): guestHTTP}
	if o.ninePort != 0 {
		forward[fmt.Sprintf("127.0.0.1:%d", o.ninePort)] = guest9P
	}
	pcap := o.pcap
	if pcap != "" {
		if pcap, err = filepath.Abs(pcap); err != nil {
			return nil, nil, err
		}
	}
	words := o.appendTo
	if o.selftest {
		// As in QEMU: the guest serves what the self-test measures with.
		words = strings.TrimSpace(words + " ether9.selftest")
	}
	if o.irq == "off" {
		words = strings.TrimSpace(words + " ether9.irq=off")
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), ether9.SimEnv(nics, forward, words, pcap)...)
	// The machine's console lines become a Console, the same as QEMU's
	// serial port, so the self-test reads both alike.
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	con := qemu.NewConsole(time.Now(), echo)
	go con.Read(pr, nil)
	if err := cmd.Start(); err != nil {
		pw.Close()
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("-machine sim: %w", err)
	}
	s := &simMachine{cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		pw.Close()
		s.done <- err
	}()
	return s, con, nil
}

// stop asks the machine to stop, waits up to d for it, then kills it: a
// machine wedged by a bug must not keep the command (or a test) from
// ending and saying so.
func (s *simMachine) stop(d time.Duration, log io.Writer) {
	defer os.RemoveAll(s.dir)
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(d):
		fmt.Fprintf(log, "boot: the simulated machine did not stop within %v; killed\n", d)
		s.cmd.Process.Kill()
		<-s.done
	}
}

// report asks the machine what surrounds the guest (ether9.SimReportSignal)
// and returns the answer's lines.
func (s *simMachine) report(ctx context.Context, con *qemu.Console) (string, error) {
	from := len(con.Lines())
	if err := s.cmd.Process.Signal(ether9.SimReportSignal); err != nil {
		return "", fmt.Errorf("asking the simulated machine for its report: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, end, err := con.Wait(ctx, from, func(l string) bool { return l == ether9.SimReportEnd }, nil)
	if err != nil {
		return "", fmt.Errorf("the simulated machine's report: %w", err)
	}
	var b strings.Builder
	for _, l := range con.Lines()[from:end] {
		if t, ok := strings.CutPrefix(l.Text, ether9.SimReportPrefix+" "); ok {
			b.WriteString("\t" + t + "\n")
		}
	}
	return b.String(), nil
}

// runSim runs the program on the simulated machine until interrupted, or
// runs the self-test against it.
func runSim(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.outDir != "" {
		return fmt.Errorf("-o writes an image for hardware; it does not go with -machine sim")
	}
	if o.selftest {
		var err error
		if o, err = withToken(o); err != nil {
			return err
		}
	}
	if o.port == 0 || (o.selftest && !o.portSet) {
		p, err := freePort()
		if err != nil {
			return err
		}
		o.port = p
	}
	m, con, err := simulate(ctx, o, stdout, stderr)
	if err != nil {
		return err
	}
	defer m.stop(10*time.Second, stderr)
	if o.selftest {
		tctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		r := &report{nic: o.nic + " (simulated)", origin: "machine start", token: o.token, bytes: int64(o.mib) << 20, ctl: o.ctl}
		r.outside = func(ctx context.Context) (string, error) { return m.report(ctx, con) }
		err := r.run(tctx, con, fmt.Sprintf("http://127.0.0.1:%d", o.port), lineHTTP, lineIOMMU)
		r.print(stdout)
		return err
	}
	fmt.Fprintf(stderr, "boot: simulated %s behind the VT-d model; http://127.0.0.1:%d/ reaches its port %d; ^C stops\n", o.nic, o.port, guestHTTP)
	select {
	case <-ctx.Done():
	case err := <-m.done:
		m.done <- err
		return fmt.Errorf("-machine sim: the program exited: %v", err)
	}
	return nil
}
