package qemu

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
		bad  bool
	}{
		{"4242 (qemu-system-x86) S 1 4242 4242 0 -1 4194560 5000 0 3 0 250 75 0 0 20 0 5 0 100 0 0\n", 3250 * time.Millisecond, false},
		// A name with spaces and a parenthesis of its own.
		{"7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", 30 * time.Millisecond, false},
		{"7 qemu R 1", 0, true},
		{"7 (qemu) R 1 7 7", 0, true},
		{"7 (qemu) R 1 7 7 0 -1 0 0 0 0 0 x 2", 0, true},
	} {
		got, err := parseStatCPU([]byte(tc.line))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseStatCPU(%q) = %v, %v; want %v (error: %v)", tc.line, got, err, tc.want, tc.bad)
		}
	}
}

// TestThreadsCPU reads this test's own threads: their time grows while
// it computes, and a process that is not there is an error.
func TestThreadsCPU(t *testing.T) {
	a, err := threadsCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	deadline := time.Now().Add(10 * time.Second)
	for b := a; b-a < 20*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s of computing moved the threads' time from %v to %v", a, b)
		}
		for i := range 1_000_000 {
			x += i
		}
		if b, err = threadsCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	_ = x
	if _, err := threadsCPU(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
