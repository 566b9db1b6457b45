package qemu

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestConsoleWait(t *testing.T) {
	pr, pw := io.Pipe()
	var echo strings.Builder
	c := NewConsole(time.Now(), &echo)
	done := make(chan struct{})
	go func() { c.Read(pr, nil); close(done) }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan Line, 1)
	go func() {
		l, err := c.WaitFor(ctx, "http: listening")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	io.WriteString(pw, "\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS\r\nether9: booting\r\npci 00:02.0 8086:10d3 e1000e\nhttp: listen")
	io.WriteString(pw, "ing :80\n")
	if l := <-got; l.Text != "http: listening :80" {
		t.Fatalf("waited line %q", l.Text)
	}
	// A line that came earlier is found too.
	if l, err := c.WaitFor(ctx, "pci 00:02.0"); err != nil || !strings.HasSuffix(l.Text, "e1000e") {
		t.Fatalf("earlier line: %q, %v", l.Text, err)
	}
	// A panic ends the wait at once with an error.
	io.WriteString(pw, "panic: runtime error: index out of range\n")
	if _, err := c.WaitFor(ctx, "ether0: dhcp"); err == nil || !strings.Contains(err.Error(), "panic: runtime error") {
		t.Fatalf("after a panic line: err = %v", err)
	}
	pw.Close()
	<-done
	if _, _, err := c.Wait(ctx, 0, func(s string) bool { return s == "never" }, nil); !errors.Is(err, ErrConsoleClosed) {
		t.Fatalf("closed console: err = %v, want ErrConsoleClosed", err)
	}
	if l := c.Lines()[0]; l.Text != "SeaBIOS" {
		t.Fatalf("first line %q, want the escapes stripped", l.Text)
	}
	if echo.String() != "\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS\r\nether9: booting\r\npci 00:02.0 8086:10d3 e1000e\nhttp: listening :80\npanic: runtime error: index out of range\n" {
		t.Fatalf("echo %q", echo.String())
	}
	if n := len(c.Lines()); n != 5 {
		t.Fatalf("%d lines, want 5", n)
	}
}

func TestConsoleWaitTimeout(t *testing.T) {
	pr, _ := io.Pipe()
	c := NewConsole(time.Now(), nil)
	go c.Read(pr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.WaitFor(ctx, "never"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	pr.Close()
}
