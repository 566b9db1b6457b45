//go:build linux

// Command init is PID 1 of the ether9 image: it mounts what it needs,
// takes the serial console, and brings the system up on the Linux-hosted
// platform. It never exits while it can serve: a panic in a service is
// caught and the service restarted. No failure of the network powers the
// machine off: without a NIC, a lease or a platform the console shell
// stays up and the console says why.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel/linux"
	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/bind"
	"github.com/ether9/ether9/ns/shell"
)

func main() {
	con := &console{w: os.Stderr, start: time.Now()}
	defer func() {
		if v := recover(); v != nil {
			con.logf("ether9: panic: %v\n%s", v, debug.Stack())
			halt(con)
		}
	}()
	if err := run(con); err != nil {
		con.logf("ether9: %v; the console stays up", err)
		stayUp(con)
	}
}

// stayUp keeps PID 1 and the console shell, over a namespace with the
// console lines alone, when the system could not be brought up.
func stayUp(con *console) {
	if con.in != nil {
		n := ns.New()
		k := bind.NewKmesg(1)
		k.Add("the system could not be brought up: see the console")
		bind.Sys(n, k, func() time.Duration { return time.Since(con.start) })
		go runShellOn(con, con.in, func() *shell.Shell { return &shell.Shell{NS: n} })
	}
	for {
		time.Sleep(time.Hour)
	}
}

func run(con *console) error {
	if os.Getpid() == 1 {
		if err := linux.Mount(); err != nil {
			con.logf("mount: %v", err)
		}
		if f, err := linux.Console(); err != nil {
			con.logf("console: %v", err)
		} else {
			con.w, con.in = f, f
		}
		con.screens = openScreens(con)
	}
	up, _ := linux.Uptime()
	con.logf("ether9: booting (kernel up %.3fs)", up)
	cmdline, err := linux.Cmdline()
	if err != nil {
		con.logf("%v", err)
	}
	if m := bootLineMissing(cmdline); len(m) > 0 {
		con.logf("ether9: the kernel command line lacks %s (the firmware's boot options replaced it?): Linux keeps VT-d and ether9 cannot take it", strings.Join(m, " "))
	}
	opt, err := system.ParseCmdline(cmdline)
	if err != nil {
		con.logf("%v", err)
	}
	xdp, xdpOn := xdpMode(cmdline)
	for _, u := range opt.Unknown {
		if xdpOn && strings.HasPrefix(u, "xdp") {
			continue
		}
		con.logf("cmdline: unknown parameter ether9.%s ignored", u)
	}
	plat, err := newPlatform(con)
	if err != nil {
		return err
	}
	if xdpOn {
		// The zero-copy programs own both hub NICs; the machine powers
		// off when they are done.
		if err := runXDP(con, plat, xdp); err != nil {
			con.logf("xdp: FAIL: %v", err)
		} else {
			con.logf("xdp: done")
		}
		halt(con)
	}
	sys, err := system.Start(context.Background(), plat, opt, con.logf)
	if err != nil {
		return err
	}
	con.logf("ether9: up in %.3fs", time.Since(con.start).Seconds())
	go printCard(con, cmdline, opt, sys)
	if con.in != nil {
		go runShellOn(con, con.in, sys.Shell)
	}
	if err := sys.Serving(); err != nil {
		con.logf("ether9: nothing to serve on the network (%v); the console stays up", err)
		for {
			time.Sleep(time.Hour)
		}
	}
	sys.Wait()
	return fmt.Errorf("every service stopped")
}

// halt powers off. If even that fails, PID 1 must not exit (the kernel
// would panic): it says so and sleeps.
func halt(con *console) {
	if os.Getpid() != 1 {
		os.Exit(1)
	}
	con.logf("ether9: powering off")
	if err := linux.PowerOff(); err != nil {
		con.logf("ether9: %v", err)
	}
	for {
		time.Sleep(time.Hour)
	}
}
