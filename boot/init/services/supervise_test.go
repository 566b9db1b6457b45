package services

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logBuf) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func TestPanicIsCaughtAndServiceRestarted(t *testing.T) {
	var log logBuf
	s := New(log.logf, time.Millisecond, 4*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make(chan int, 10)
	n := 0
	s.Go(ctx, "echo", func(ctx context.Context) error {
		n++
		runs <- n
		if n < 3 {
			var m map[string]int
			m["boom"] = 1 // a real runtime panic: assignment to a nil map
		}
		<-ctx.Done()
		return nil
	})
	for want := 1; want <= 3; want++ {
		select {
		case got := <-runs:
			if got != want {
				t.Fatalf("run %d, want %d", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("service not restarted for run %d; log:\n%s", want, log.text())
		}
	}
	cancel()
	s.Wait()
	if r := s.Restarts("echo"); r != 2 {
		t.Fatalf("%d restarts, want 2", r)
	}
	out := log.text()
	if !strings.Contains(out, "echo: panic: assignment to entry in nil map") || !strings.Contains(out, "goroutine") {
		t.Fatalf("panic not logged with its stack:\n%s", out)
	}
}

func TestErrorRestartsAndNilFinishes(t *testing.T) {
	var log logBuf
	s := New(log.logf, time.Millisecond, time.Millisecond)
	calls := 0
	s.Go(context.Background(), "dhcp", func(context.Context) error {
		calls++
		if calls == 1 {
			return errors.New("no offer")
		}
		return nil
	})
	s.Wait()
	if calls != 2 {
		t.Fatalf("%d calls, want 2", calls)
	}
	if out := log.text(); !strings.Contains(out, "dhcp: no offer") || !strings.Contains(out, "dhcp: restart 1") {
		t.Fatalf("log:\n%s", out)
	}
}

func TestCallPassesErrorsThrough(t *testing.T) {
	want := errors.New("plain")
	if err := Call(func() error { return want }); err != want {
		t.Fatalf("Call = %v, want %v", err, want)
	}
	var p *PanicError
	if err := Call(func() error { panic("x") }); !errors.As(err, &p) || p.Value != "x" {
		t.Fatalf("Call of a panicking func = %v", err)
	}
}
