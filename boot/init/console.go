//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// console writes whole lines to the serial console, one fact per line, so
// that lines from concurrent services never interleave.
type console struct {
	mu sync.Mutex
	w  io.Writer
	in *os.File // the console's input, nil when not on one
	// screens get every line too: the kernel's other consoles
	// (openScreens).
	screens []io.Writer
	start   time.Time
}

func (c *console) logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.w, s)
	for _, w := range c.screens {
		io.WriteString(w, s)
	}
}
