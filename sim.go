package ether9

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/ether9/ether9/boot/init/simmachine"
)

// The environment through which the runner (go run ./boot -machine sim)
// starts a program on the simulated machine instead of as PID 1.
const (
	envMachine = "ETHER9_MACHINE"     // "sim"
	envNICs    = "ETHER9_SIM_NICS"    // "igc,igb": the NIC families, one wire and peer each
	envForward = "ETHER9_SIM_FORWARD" // "127.0.0.1:8080=80,127.0.0.1:5640=564": host address = machine port
	envCmdline = "ETHER9_CMDLINE"     // the ether9.* words a kernel command line would carry
	envPcap    = "ETHER9_SIM_PCAP"    // record the first wire to this file
)

// A runner asks a program on the simulated machine what the world outside
// it looks like (simmachine.Host.Report: the NIC models' rings, the
// peers' TCP) with SimReportSignal; the answer is console lines with
// SimReportPrefix, SimReportEnd last.
const (
	SimReportSignal = syscall.SIGUSR1
	SimReportPrefix = "sim:"
	SimReportEnd    = "sim: end of report"
)

// SimEnv is the environment that starts a program on the simulated
// machine: nics are NIC families (simmachine.Families), forward maps host
// addresses to the machine's TCP ports, cmdline holds ether9.* words.
func SimEnv(nics []string, forward map[string]uint16, cmdline, pcap string) []string {
	var fw []string
	for a, p := range forward {
		fw = append(fw, fmt.Sprintf("%s=%d", a, p))
	}
	return []string{
		envMachine + "=sim",
		envNICs + "=" + strings.Join(nics, ","),
		envForward + "=" + strings.Join(fw, ","),
		envCmdline + "=" + cmdline,
		envPcap + "=" + pcap,
	}
}

// mainSim runs p on a simulated machine described by the environment
// until SIGINT or SIGTERM, its console lines on stderr.
func (c Config) mainSim(p Program) int {
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.runSim(ctx, p, logf); err != nil {
		logf("ether9: %v", err)
		return 1
	}
	return 0
}

func (c Config) runSim(ctx context.Context, p Program, logf func(string, ...any)) error {
	cfg := simmachine.Config{Logf: logf, NICs: []string{"e1000e"}}
	if s := os.Getenv(envNICs); s != "" {
		cfg.NICs = strings.Split(s, ",")
	}
	if path := os.Getenv(envPcap); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("pcap: %w", err)
		}
		defer f.Close()
		cfg.Pcap = f
	}
	forwards, err := parseForwards(os.Getenv(envForward))
	if err != nil {
		return err
	}
	h, err := simmachine.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer h.Close()
	opt := c.options(simmachine.Options(len(h.Models)), os.Getenv(envCmdline), logf)
	sys, err := h.Boot(opt, logf)
	if err != nil {
		return err
	}
	logf("ether9: up on the simulated machine (%s)", strings.Join(cfg.NICs, ", "))
	for _, f := range forwards {
		if _, err := h.Listen(f.host, f.port); err != nil {
			return err
		}
	}
	c.start(h.Context(), sys, p)
	report := make(chan os.Signal, 1)
	signal.Notify(report, SimReportSignal)
	defer signal.Stop(report)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-report:
			for _, l := range h.Report() {
				logf("%s %s", SimReportPrefix, l)
			}
			logf("%s", SimReportEnd)
		}
	}
}

type simForward struct {
	host string
	port uint16
}

// parseForwards reads "ADDR=PORT,...".
func parseForwards(s string) ([]simForward, error) {
	var out []simForward
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		host, port, ok := strings.Cut(f, "=")
		n, err := strconv.ParseUint(port, 10, 16)
		if !ok || err != nil || n == 0 {
			return nil, fmt.Errorf("%s: %q: want HOST:PORT=GUESTPORT", envForward, f)
		}
		out = append(out, simForward{host, uint16(n)})
	}
	return out, nil
}
