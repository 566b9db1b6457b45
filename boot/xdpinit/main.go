//go:build linux

// Command xdpinit is the /init of the runner's -xdp boot: two igb NICs on
// a QEMU hub, one pushing frames and one under test, rxdrop, txpush and
// l2fwd over the netstack, copy and zero-copy queue paths, one console
// line per cell, then power-off. It owns the NICs itself rather than
// through the system, so it runs apart from the programs of package ether9.
package main

import (
	"github.com/ether9/ether9/boot/init/linuxhost"
	"github.com/ether9/ether9/kernel/linux"
)

func main() {
	con := linuxhost.Start()
	defer func() {
		if v := recover(); v != nil {
			con.Logf("xdp: FAIL: panic: %v", v)
			linuxhost.Halt(con)
		}
	}()
	cmdline, err := linux.Cmdline()
	if err != nil {
		con.Logf("%v", err)
	}
	mode, _ := xdpMode(cmdline)
	plat, err := linuxhost.Platform(con)
	if err == nil {
		err = runXDP(con.Logf, plat, mode)
	}
	if err != nil {
		con.Logf("xdp: FAIL: %v", err)
	} else {
		con.Logf("xdp: done")
	}
	linuxhost.Halt(con)
}
