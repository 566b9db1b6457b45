//go:build linux

package linuxhost

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Console writes whole lines to the serial console, one fact per line, so
// that lines from concurrent services never interleave.
type Console struct {
	mu sync.Mutex
	w  io.Writer
	in *os.File // the console's input, nil when not on one
	// screens get every line too: the kernel's other consoles
	// (openScreens).
	screens []io.Writer
	start   time.Time
}

// NewConsole writes lines to w.
func NewConsole(w io.Writer) *Console { return &Console{w: w, start: time.Now()} }

// Logf writes one line.
func (c *Console) Logf(format string, args ...any) {
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

// Write writes p under the console's lock, so shell output and service
// lines do not interleave mid-line.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

// Since is the time since the console was made: the program's start.
func (c *Console) Since() time.Duration { return time.Since(c.start) }
