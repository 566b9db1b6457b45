package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/boot/qemu"
	"github.com/ether9/ether9/kernel/sim/m82574"
)

// simNICs are the NIC models of the simulated machine, by family.
var simNICs = map[string]m82574.Personality{
	"e1000e": m82574.M82574L,
}

// simulate brings ether9 up on the simulated machine, in this process,
// with its console lines going to a Console that starts now.
func simulate(ctx context.Context, o options, echo io.Writer) (*simmachine.Host, *qemu.Console, func(), error) {
	pers, ok := simNICs[o.nic]
	if !ok {
		return nil, nil, nil, fmt.Errorf("-machine sim: no simulated %s model yet (have e1000e)", o.nic)
	}
	words := o.appendTo
	if o.selftest {
		// As in QEMU: the guest serves what the self-test measures with.
		words = strings.TrimSpace(words + " ether9.selftest")
	}
	if o.irq == "off" {
		words = strings.TrimSpace(words + " ether9.irq=off")
	}
	opt, err := simOptions(words)
	if err != nil {
		return nil, nil, nil, err
	}
	var pcap *os.File
	if o.pcap != "" {
		if pcap, err = os.Create(o.pcap); err != nil {
			return nil, nil, nil, fmt.Errorf("-pcap: %w", err)
		}
	}
	// The machine's log lines become a console, the same as QEMU's serial
	// port, so the self-test reads both alike.
	pr, pw := io.Pipe()
	con := qemu.NewConsole(time.Now(), echo)
	go con.Read(pr, nil)
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(pw, format+"\n", args...)
	}
	cfg := simmachine.Config{
		Listen:      fmt.Sprintf("127.0.0.1:%d", o.port),
		Options:     opt,
		Personality: pers,
		Logf:        logf,
	}
	if pcap != nil {
		cfg.Pcap = pcap
	}
	h, err := simmachine.Start(ctx, cfg)
	stop := func() {
		if h != nil {
			h.Close()
		}
		pw.Close()
		if pcap != nil {
			pcap.Close()
		}
	}
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return h, con, stop, nil
}

// simOptions reads ether9.* words from -append for the simulated machine.
// Its wire has no DHCP server, so the address is static: the one given,
// or QEMU's user-network address.
func simOptions(words string) (*system.Options, error) {
	if words == "" {
		return nil, nil // simmachine's defaults
	}
	opt, err := system.ParseCmdline(words)
	if err != nil {
		return nil, fmt.Errorf("-append: %w", err)
	}
	if !opt.IP.IsValid() {
		opt.IP = simmachine.GuestAddr
	}
	if !opt.Gateway.IsValid() {
		opt.Gateway = simmachine.PeerAddr.Addr()
	}
	opt.DHCP = false
	return &opt, nil
}

// runSim runs ether9 on the simulated machine until interrupted, or runs
// the self-test against it.
func runSim(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.outDir != "" {
		return fmt.Errorf("-o writes an image for hardware; it does not go with -machine sim")
	}
	if o.port == 0 || (o.selftest && !o.portSet) {
		p, err := freePort()
		if err != nil {
			return err
		}
		o.port = p
	}
	h, con, stop, err := simulate(ctx, o, stdout)
	if err != nil {
		return err
	}
	defer stopWithin(stop, 10*time.Second, stderr)
	if o.selftest {
		tctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		r := &report{nic: o.nic + " (simulated)", origin: "machine start"}
		err := r.run(tctx, con, fmt.Sprintf("http://%s", h.Forward.Addr()), lineHTTP, lineIOMMU)
		r.print(stdout)
		return err
	}
	fmt.Fprintf(stderr, "boot: simulated %s behind the VT-d model; http://%s/ reaches its port 80; ^C stops\n", o.nic, h.Forward.Addr())
	<-ctx.Done()
	return nil
}

// stopWithin runs stop but waits for it no longer than d: a machine wedged
// by a bug must not keep the command (or a test) from ending and saying so.
func stopWithin(stop func(), d time.Duration, log io.Writer) {
	done := make(chan struct{})
	go func() {
		stop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		fmt.Fprintf(log, "boot: the simulated machine did not stop within %v\n", d)
	}
}
