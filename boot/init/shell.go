//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ether9/ether9/ns/shell"
)

// runShellOn serves the console shell sh makes on f for as long as PID 1
// runs.
// The terminal goes to raw mode (no kernel echo, line editing or signals)
// because the shell edits lines itself and ^C must reach it, not kill
// PID 1. A shell that stops (end of input, an error) is restarted after a
// pause: the console is how a person reaches a machine with no network.
func runShellOn(con *console, f *os.File, sh func() *shell.Shell) {
	if t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
		t.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
		t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
		if err := unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t); err != nil {
			con.logf("shell: raw mode: %v", err)
		}
	}
	con.logf("shell: on the console (type help)")
	for {
		if err := shellOnce(f, con, sh); err != nil {
			con.logf("shell: %v", err)
		}
		time.Sleep(time.Second)
	}
}

// shellOnce runs one shell; a panic in a command is reported, never fatal.
func shellOnce(f *os.File, con *console, sh func() *shell.Shell) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return sh().Run(context.Background(), f, &lockedWriter{con})
}

// lockedWriter writes through the console's lock so shell output and
// service lines do not interleave mid-line.
type lockedWriter struct{ c *console }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.w.Write(p)
}
