package failtest

import (
	"slices"
	"testing"
)

func TestRun(t *testing.T) {
	got := Run(func(tb testing.TB) {
		tb.Errorf("first %d", 1)
		tb.Fatalf("second")
		tb.Errorf("never reached")
	})
	if !slices.Equal(got, []string{"first 1", "second"}) {
		t.Errorf("recorded %q", got)
	}
	if got := Run(func(testing.TB) {}); len(got) != 0 {
		t.Errorf("a helper that passes recorded %q", got)
	}
	if got := First(func(tb testing.TB) { tb.Fatal("only ", 1) }); got != "only 1" {
		t.Errorf("First %q", got)
	}
}
