//go:build linux

package ether9

import (
	"context"
	"errors"
	"os"
	"runtime/debug"
	"time"

	"github.com/ether9/ether9/boot/init/linuxhost"
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel/linux"
)

// Main brings the machine up and runs p on it. As PID 1 it never
// returns: when the system cannot come up, or nothing is left to serve,
// it says why and keeps the console shell. Started by the runner for the simulated
// machine (ETHER9_MACHINE=sim), it runs there until interrupted.
func (c Config) Main(p Program) {
	c = c.withDefaults()
	if os.Getenv(envMachine) == "sim" {
		os.Exit(c.mainSim(p))
	}
	con := linuxhost.Start()
	defer func() {
		if v := recover(); v != nil {
			con.Logf("ether9: panic: %v\n%s", v, debug.Stack())
			linuxhost.Halt(con)
		}
	}()
	if err := c.mainLinux(con, p); err != nil {
		con.Logf("ether9: %v; the console stays up", err)
	}
	linuxhost.StayUp(con)
}

// mainLinux brings the system up and starts p. No failure of the network
// powers the machine off: it returns with the console to keep.
func (c Config) mainLinux(con *linuxhost.Console, p Program) error {
	cmdline, err := linux.Cmdline()
	if err != nil {
		con.Logf("%v", err)
	}
	linuxhost.CheckBootLine(con, cmdline)
	opt := c.options(system.DefaultOptions(), cmdline, con.Logf)
	plat, err := linuxhost.Platform(con)
	if err != nil {
		return err
	}
	ctx := context.Background()
	sys, err := system.Start(ctx, plat, opt, con.Logf)
	if err != nil {
		return err
	}
	con.Logf("ether9: up in %.3fs", con.Since().Seconds())
	go linuxhost.Card(con, cmdline, opt, sys)
	go linuxhost.Shell(con, sys.Shell)
	if err := sys.Serving(); err != nil {
		con.Logf("ether9: nothing to serve on the network (%v); the console stays up", err)
		for {
			time.Sleep(time.Hour)
		}
	}
	c.start(ctx, sys, p)
	sys.Wait()
	return errors.New("every service stopped")
}
