package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ether9/ether9/ns"
)

type knob struct{ v atomic.Int64 }

func (k *knob) Read() (string, error) { return fmt.Sprintf("copybreak: %d\n", k.v.Load()), nil }
func (k *knob) Write(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) != 2 || f[0] != "copybreak" {
		return fmt.Errorf("unknown ctl %q", cmd)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("copybreak %q: not a number", f[1])
	}
	k.v.Store(int64(n))
	return nil
}

func newShell(t *testing.T) (*Shell, *knob) {
	n := ns.New()
	k := &knob{}
	if err := n.Add("/net/ether0/ctl", k); err != nil {
		t.Fatal(err)
	}
	if err := n.Add("/net/ether0/stats", ns.Text(func() string { return "rx-frames: 7\n" })); err != nil {
		t.Fatal(err)
	}
	return &Shell{NS: n, Prompt: "% "}, k
}

func TestExec(t *testing.T) {
	s, k := newShell(t)
	for _, tc := range []struct {
		line, want, wantErr string
	}{
		{"ls", "d-r-xr-xr-x net/\n", ""},
		{"ls /net/ether0", "--rw-r--r-- ctl\n--r--r--r-- stats\n", ""},
		{"cat /net/ether0/stats", "rx-frames: 7\n", ""},
		{"echo copybreak 2048 > /net/ether0/ctl", "", ""},
		{"cat /net/ether0/ctl", "copybreak: 2048\n", ""},
		{"echo copybreak x > /net/ether0/ctl", "", "not a number"},
		{"echo hello   world", "hello world\n", ""},
		{"echo a >", "", "usage"},
		{"cat /nope", "", "does not exist"},
		{"frob", "", "unknown command"},
		{"ping 10.0.2.2", "", "no network stack"},
		{"", "", ""},
	} {
		var b bytes.Buffer
		err := s.Exec(context.Background(), tc.line, &b)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%q: error %v, want %q", tc.line, err, tc.wantErr)
		}
		if b.String() != tc.want {
			t.Errorf("%q: output %q, want %q", tc.line, b.String(), tc.want)
		}
	}
	if k.v.Load() != 2048 {
		t.Errorf("bad copybreak changed the value to %d", k.v.Load())
	}
	var b bytes.Buffer
	if err := s.Exec(context.Background(), "ps", &b); err != nil || !strings.Contains(b.String(), "goroutines\n") || !strings.Contains(b.String(), "shell.ps <- ") {
		t.Errorf("ps: %v\n%s", err, b.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the shell and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) waitFor(t *testing.T, sub string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.String(), sub) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in output:\n%q", sub, s.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLineEditing(t *testing.T) {
	s, k := newShell(t)
	// Typed: a typo fixed with backspace and DEL, a line killed with ^U, a
	// line abandoned with ^C, then a command with CR as a terminal sends.
	in := "caxx\b\x7ft /net/ether0/stats\r" +
		"echo copybreak 1 > /net/ether0/ctl\x15" +
		"echo copybreak 2 > /net/ether0/ctl\x03" +
		"echo copybreak 3 > /net/ether0/ctl\r"
	var out syncBuffer
	if err := s.Run(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "rx-frames: 7\r\n") {
		t.Errorf("cat after backspaces did not run:\n%q", out.String())
	}
	if k.v.Load() != 3 {
		t.Errorf("copybreak %d, want 3: ^U and ^C lines must not run", k.v.Load())
	}
}

func TestInterruptPing(t *testing.T) {
	s, _ := newShell(t)
	started := make(chan struct{})
	s.Ping = func(ctx context.Context, host string) (time.Duration, error) {
		close(started)
		<-ctx.Done()
		return 0, ctx.Err()
	}
	r, w := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), r, &out) }()
	io.WriteString(w, "ping 10.0.2.2\r")
	<-started
	io.WriteString(w, "\x03")
	out.waitFor(t, "context canceled")
	// The shell answers again after the interrupt.
	io.WriteString(w, "cat /net/ether0/stats\r")
	out.waitFor(t, "rx-frames: 7")
	w.Close()
	if err := <-done; err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
}

// A ^C while a command runs: the editor echoes it while the command,
// cancelled, prints its error, each from its own goroutine, into one
// terminal (found by FuzzLineEditing under -race).
func TestCtrlCWhileCommandPrints(t *testing.T) {
	s, _ := newShell(t)
	started := make(chan struct{})
	s.Ping = func(ctx context.Context, host string) (time.Duration, error) {
		close(started)
		<-ctx.Done()
		return 0, ctx.Err()
	}
	inR, inW := io.Pipe()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), inR, &out) }()
	inW.Write([]byte("ping 10.0.2.2\r"))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("ping never started")
	}
	inW.Write([]byte{ctrlC})
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shell did not end")
	}
	if got := out.String(); !strings.Contains(got, "^C") || !strings.Contains(got, "context canceled") {
		t.Fatalf("output %q: want the ^C and the cancelled ping", got)
	}
}
