//go:build linux

package linuxhost

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/ns/shell"
)

// Shell serves the console shell sh makes for as long as PID 1 runs, when
// the process is on a console. The terminal goes to raw mode (no kernel
// echo, line editing or signals) because the shell edits lines itself and
// ^C must reach it, not kill PID 1. A shell that stops (end of input, an
// error) is restarted after a pause: the console is how a person reaches
// a machine with no network.
func Shell(con *Console, sh func() *shell.Shell) {
	f := con.in
	if f == nil {
		return
	}
	// Through Control, not Fd: Fd would make the file blocking, and a
	// blocked read would hold the one P (linux.Console).
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			if t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS); err == nil {
				t.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
				t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
				if err := unix.IoctlSetTermios(int(fd), unix.TCSETS, t); err != nil {
					con.Logf("shell: raw mode: %v", err)
				}
			}
		})
	}
	con.Logf("shell: on the console (type help)")
	for {
		if err := shellOnce(con, sh); err != nil {
			con.Logf("shell: %v", err)
		}
		time.Sleep(time.Second)
	}
}

// shellOnce runs one shell; a panic in a command is reported, never fatal.
func shellOnce(con *Console, sh func() *shell.Shell) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return sh().Run(context.Background(), con.in, con)
}
