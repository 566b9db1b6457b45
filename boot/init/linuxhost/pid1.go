//go:build linux

// Package linuxhost is PID 1's platform, Linux-hosted or on the ring-0 shim
// (platform_metal.go): as PID 1 of the image it
// mounts what it needs, takes the serial console, and assembles the
// system's Platform from port I/O, pinned memory, the DMAR table, BAR
// windows and each NIC's legacy interrupt through uio. It also serves the
// console shell and powers the machine off.
package linuxhost

import (
	"os"
	"time"

	"github.com/ether9/ether9/kernel/linux"
	"github.com/ether9/ether9/kernel/metal"
	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/bind"
	"github.com/ether9/ether9/ns/shell"
)

// Start readies the process: as PID 1 it mounts /proc, /sys and /dev and
// takes the serial console; as any other process its lines go to stderr.
// On the ring-0 shim there is nothing to mount (it has no file systems,
// and each mount would only say so on the console) and no screen but
// COM1.
func Start() *Console {
	con := NewConsole(os.Stderr)
	if PID1() {
		onShim := metal.Running()
		if !onShim {
			if err := linux.Mount(); err != nil {
				con.Logf("mount: %v", err)
			}
		}
		out, in, err := linux.Console()
		if out != nil {
			con.w, con.in = out, in
		}
		if err != nil {
			con.Logf("%v", err)
		}
		if !onShim {
			con.screens = openScreens(con)
		}
	}
	up, _ := linux.Uptime()
	con.Logf("ether9: booting (kernel up %.3fs)", up)
	return con
}

// StayUp keeps PID 1 and the console shell, over a namespace with the
// console lines alone, when the system could not be brought up: no
// failure of the network powers the machine off.
func StayUp(con *Console) {
	if con.in != nil {
		n := ns.New()
		k := bind.NewKmesg(1)
		k.Add("the system could not be brought up: see the console")
		bind.Sys(n, k, con.Since)
		go Shell(con, func() *shell.Shell { return &shell.Shell{NS: n} })
	}
	for {
		time.Sleep(time.Hour)
	}
}

// PID1 reports whether this process is the image's init.
func PID1() bool { return os.Getpid() == 1 }

// Halt powers off. If even that fails, PID 1 must not exit (the kernel
// would panic): it says so and sleeps. Any other process exits.
func Halt(con *Console) {
	if !PID1() {
		os.Exit(1)
	}
	con.Logf("ether9: powering off")
	if err := linux.PowerOff(); err != nil {
		con.Logf("ether9: %v", err)
	}
	for {
		time.Sleep(time.Hour)
	}
}
