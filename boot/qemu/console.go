package qemu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Line is one console line and when it arrived, counted from the start.
type Line struct {
	At   time.Duration
	Text string
	// CPU is QEMU's processor time when the line arrived (0 when the
	// console has no process to read it from): on a busy host the wall
	// clock stretches, the CPU time a stage took much less.
	CPU time.Duration
}

// Console collects a serial console line by line, copies it to a writer,
// and lets callers wait for lines. It is safe for concurrent use.
type Console struct {
	start time.Time
	out   io.Writer
	cpu   func() (time.Duration, error) // QEMU's CPU time; nil: none

	mu      sync.Mutex
	lines   []Line
	closed  error         // why the console ended; nil while it runs
	changed chan struct{} // closed and replaced on every change
}

// ErrConsoleClosed is returned by Wait when the console ends (the machine
// stopped) before a matching line arrived.
var ErrConsoleClosed = errors.New("console closed")

// NewConsole returns a console whose times count from start and which
// copies every byte it reads to out (nil: nowhere).
func NewConsole(start time.Time, out io.Writer) *Console {
	if out == nil {
		out = io.Discard
	}
	return &Console{start: start, out: out, changed: make(chan struct{})}
}

// Read consumes r until it ends, then closes the console with err (or
// ErrConsoleClosed when nil).
func (c *Console) Read(r io.Reader, end func() error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		s, err := br.ReadString('\n')
		if s != "" {
			c.out.Write([]byte(s))
			c.add(s)
		}
		if err != nil {
			break
		}
	}
	var why error
	if end != nil {
		why = end()
	}
	c.close(why)
}

func (c *Console) add(s string) {
	s = stripEscapes(strings.TrimRight(s, "\r\n"))
	at := time.Since(c.start)
	var cpu time.Duration
	if c.cpu != nil {
		cpu, _ = c.cpu() // a QEMU that just exited leaves it 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, Line{At: at, Text: s, CPU: cpu})
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Console) close(why error) {
	if why == nil {
		why = ErrConsoleClosed
	} else {
		why = fmt.Errorf("%w: %w", ErrConsoleClosed, why)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed == nil {
		c.closed = why
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// Lines returns a copy of every line so far.
func (c *Console) Lines() []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Line(nil), c.lines...)
}

// Tail returns the last n lines as text, for error messages.
func (c *Console) Tail(n int) string {
	l := c.Lines()
	l = l[max(0, len(l)-n):]
	var b strings.Builder
	for _, x := range l {
		b.WriteString("\t" + x.Text + "\n")
	}
	return b.String()
}

// Wait returns the first line, at or after line number from, for which
// match is true. It fails when ctx ends or the console closes first, or at
// once when a line matches fail (a kernel panic, say).
func (c *Console) Wait(ctx context.Context, from int, match, fail func(string) bool) (Line, int, error) {
	for i := from; ; {
		c.mu.Lock()
		lines, closed, changed := c.lines, c.closed, c.changed
		c.mu.Unlock()
		for ; i < len(lines); i++ {
			if match(lines[i].Text) {
				return lines[i], i, nil
			}
			if fail != nil && fail(lines[i].Text) {
				return lines[i], i, fmt.Errorf("console: %q", lines[i].Text)
			}
		}
		if closed != nil {
			return Line{}, i, closed
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Line{}, i, ctx.Err()
		}
	}
}

// WaitFor waits for a line containing substr anywhere in the console.
func (c *Console) WaitFor(ctx context.Context, substr string) (Line, error) {
	l, _, err := c.Wait(ctx, 0, func(s string) bool { return strings.Contains(s, substr) }, Panicked)
	if err != nil {
		return l, fmt.Errorf("waiting for %q: %w", substr, err)
	}
	return l, nil
}

// WaitMatch waits for a line matching re anywhere in the console.
func (c *Console) WaitMatch(ctx context.Context, re *regexp.Regexp) (Line, error) {
	l, _, err := c.Wait(ctx, 0, re.MatchString, Panicked)
	if err != nil {
		return l, fmt.Errorf("waiting for %q: %w", re, err)
	}
	return l, nil
}

// Panicked reports whether a console line says the guest died.
func Panicked(s string) bool {
	return strings.Contains(s, "Kernel panic") || strings.HasPrefix(s, "panic: ") ||
		strings.Contains(s, "fatal error: ")
}

// stripEscapes removes the terminal escape sequences firmware prints
// (SeaBIOS clears the screen) so that lines compare as text.
func stripEscapes(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '[' {
			// CSI: parameters and intermediates, then one final byte.
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
			continue
		}
		i++ // a two-byte sequence such as ESC c
	}
	return b.String()
}
