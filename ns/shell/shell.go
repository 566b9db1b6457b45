// Package shell is the serial console's shell over the namespace: ls,
// cat, echo ... > file, ping, ps and help, with line editing enough for a
// serial terminal in raw mode (backspace, ^U, ^C).
package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/ether9/ether9/ns"
)

// Control characters the line editor acts on.
const (
	ctrlC     = 0x03
	ctrlD     = 0x04
	backspace = 0x08
	ctrlU     = 0x15
	del       = 0x7f
)

// Shell runs commands against one namespace.
type Shell struct {
	NS     *ns.Namespace
	Prompt string // "ether9% " when empty
	// Ping sends echo requests to host until one is answered or ctx ends;
	// nil: ping says there is no network stack.
	Ping func(ctx context.Context, host string) (time.Duration, error)
}

// Run reads lines from in and answers on out until in ends or ctx is
// done. A ^C abandons the line being typed, or stops the running command.
func (s *Shell) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	// A running command writes from its own goroutine while the editor
	// echoes keys (a ^C): one write at a time.
	out = &syncWriter{w: out}
	keys := make(chan byte, 64)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReader(in)
		for {
			c, err := r.ReadByte()
			if err != nil {
				readErr <- err
				close(keys)
				return
			}
			keys <- c
		}
	}()
	prompt := s.Prompt
	if prompt == "" {
		prompt = "ether9% "
	}
	var line, ahead []byte // ahead: keys typed while a command ran
	io.WriteString(out, prompt)
	for {
		var c byte
		ok := true
		if len(ahead) > 0 {
			c, ahead = ahead[0], ahead[1:]
		} else {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case c, ok = <-keys:
			}
		}
		if !ok {
			if err := <-readErr; !errors.Is(err, io.EOF) {
				return fmt.Errorf("shell: %w", err)
			}
			return nil
		}
		switch c {
		case '\r', '\n':
			io.WriteString(out, "\r\n")
			ahead = append(ahead, s.runLine(ctx, string(line), out, keys)...)
			line = line[:0]
			io.WriteString(out, prompt)
		case backspace, del:
			if len(line) > 0 {
				line = line[:len(line)-1]
				io.WriteString(out, "\b \b")
			}
		case ctrlU:
			io.WriteString(out, strings.Repeat("\b \b", len(line)))
			line = line[:0]
		case ctrlC:
			io.WriteString(out, "^C\r\n"+prompt)
			line = line[:0]
		case ctrlD:
			if len(line) == 0 {
				io.WriteString(out, "\r\n")
				return nil
			}
		default:
			if c >= 0x20 && c < 0x7f && len(line) < 4096 {
				line = append(line, c)
				out.Write([]byte{c})
			}
		}
	}
}

// runLine runs one command; a ^C typed meanwhile cancels it. Other keys
// typed while it runs are returned, to be read as the next input.
func (s *Shell) runLine(ctx context.Context, line string, out io.Writer, keys <-chan byte) (ahead []byte) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	w := &crlf{w: out}
	go func() {
		defer close(done)
		if err := s.Exec(ctx, line, w); err != nil {
			fmt.Fprintf(w, "%v\n", err)
		}
	}()
	for {
		select {
		case <-done:
			return ahead
		case c, ok := <-keys:
			if !ok {
				<-done
				return ahead
			}
			if c == ctrlC {
				cancel()
				io.WriteString(out, "^C\r\n")
				ahead = ahead[:0] // ^C also discards what was typed ahead
				continue
			}
			ahead = append(ahead, c)
		}
	}
}

// syncWriter serialises the writes of the editor and of the command.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// crlf turns "\n" into "\r\n" for a raw-mode terminal.
type crlf struct{ w io.Writer }

func (c *crlf) Write(p []byte) (int, error) {
	if _, err := io.WriteString(c.w, strings.ReplaceAll(string(p), "\n", "\r\n")); err != nil {
		return 0, err
	}
	return len(p), nil
}

var help = []struct{ cmd, what string }{
	{"ls [DIR...]", "list directories (/ by default)"},
	{"cat FILE...", "print files"},
	{"echo WORDS... > FILE", "write a command to a file (a ctl)"},
	{"ping HOST", "send ICMP echo requests until one is answered"},
	{"ps", "list goroutines"},
	{"help", "this list"},
}

// Exec runs one command line, writing its output to w.
func (s *Shell) Exec(ctx context.Context, line string, w io.Writer) error {
	args := strings.Fields(line)
	if len(args) == 0 {
		return nil
	}
	switch args[0] {
	case "help":
		for _, h := range help {
			fmt.Fprintf(w, "%-22s %s\n", h.cmd, h.what)
		}
		return nil
	case "ls":
		return s.ls(args[1:], w)
	case "cat":
		if len(args) < 2 {
			return fmt.Errorf("usage: cat FILE...")
		}
		for _, p := range args[1:] {
			c, err := s.NS.ReadFile(p)
			if err != nil {
				return err
			}
			io.WriteString(w, c)
			if c != "" && !strings.HasSuffix(c, "\n") {
				io.WriteString(w, "\n")
			}
		}
		return nil
	case "echo":
		return s.echo(line, w)
	case "ping":
		return s.ping(ctx, args[1:], w)
	case "ps":
		return ps(w)
	}
	return fmt.Errorf("%s: unknown command (try help)", args[0])
}

func (s *Shell) ls(dirs []string, w io.Writer) error {
	if len(dirs) == 0 {
		dirs = []string{"/"}
	}
	for _, d := range dirs {
		e, err := s.NS.Stat(d)
		if err != nil {
			return err
		}
		if !e.Dir {
			fmt.Fprintln(w, ns.Clean(d))
			continue
		}
		ents, err := s.NS.List(d)
		if err != nil {
			return err
		}
		if len(dirs) > 1 {
			fmt.Fprintf(w, "%s:\n", ns.Clean(d))
		}
		for _, e := range ents {
			switch {
			case e.Dir:
				fmt.Fprintf(w, "d-r-xr-xr-x %s/\n", e.Name)
			case e.Writable:
				fmt.Fprintf(w, "--rw-r--r-- %s\n", e.Name)
			default:
				fmt.Fprintf(w, "--r--r--r-- %s\n", e.Name)
			}
		}
	}
	return nil
}

// echo handles "echo words" and "echo words > file".
func (s *Shell) echo(line string, w io.Writer) error {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "echo"))
	text, file, redirect := strings.Cut(rest, ">")
	text = strings.Join(strings.Fields(text), " ")
	if !redirect {
		fmt.Fprintln(w, text)
		return nil
	}
	file = strings.TrimSpace(file)
	if file == "" || strings.ContainsAny(file, " \t>") {
		return fmt.Errorf("usage: echo WORDS... > FILE")
	}
	return s.NS.WriteFile(file, text)
}

func (s *Shell) ping(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: ping HOST")
	}
	if s.Ping == nil {
		return fmt.Errorf("ping: no network stack")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rtt, err := s.Ping(ctx, args[0])
	if err != nil {
		return fmt.Errorf("ping %s: %w", args[0], err)
	}
	fmt.Fprintf(w, "reply from %s: time %.3fms\n", args[0], float64(rtt)/float64(time.Millisecond))
	return nil
}

// ps lists the goroutines, one per line: id, state and the function it
// runs with the function that started it, then the total.
func ps(w io.Writer) error {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	blocks := strings.Split(string(buf[:n]), "\n\n")
	for _, b := range blocks {
		lines := strings.Split(strings.TrimSpace(b), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "goroutine ") {
			continue
		}
		head := strings.TrimSuffix(strings.TrimPrefix(lines[0], "goroutine "), ":")
		fn := lines[1]
		if i := strings.LastIndex(fn, "("); i > 0 {
			fn = fn[:i]
		}
		// The creator says what the goroutine is for better than the frame
		// it sleeps in.
		for _, l := range lines {
			if after, ok := strings.CutPrefix(l, "created by "); ok {
				if i := strings.Index(after, " in goroutine"); i > 0 {
					after = after[:i]
				}
				fn += " <- " + after
				break
			}
		}
		fmt.Fprintf(w, "%s %s\n", head, fn)
	}
	fmt.Fprintf(w, "%d goroutines\n", len(blocks))
	return nil
}
