package xskapp

import (
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/internal/failtest"
)

func TestNewFillsAndAccounts(t *testing.T) {
	a := New(t, 64, 10, 32)
	if len(a.Free) != 54 || a.S.Umem.Frames() != 64 {
		t.Fatalf("%d free of %d frames, want 54 after filling 10", len(a.Free), a.S.Umem.Frames())
	}
	a.Fill(100) // more than it holds: gives what it has
	if len(a.Free) != 0 {
		t.Fatalf("%d frames still free after filling everything", len(a.Free))
	}
	a.Account(t, nil) // all 64 are on the fill ring
}

func TestAccountCatchesALostFrame(t *testing.T) {
	a := New(t, 16, 4, 16)
	a.Free = a.Free[1:] // the application drops one
	if msg := failtest.First(func(tb testing.TB) { a.Account(tb, nil) }); !strings.Contains(msg, "15 of 16 frames") {
		t.Errorf("a lost frame: %q", msg)
	}
}

func TestAccountCatchesADoubleFrame(t *testing.T) {
	a := New(t, 16, 4, 16)
	a.Free = append(a.Free, a.Free[0])
	if msg := failtest.First(func(tb testing.TB) { a.Account(tb, nil) }); !strings.Contains(msg, "twice") {
		t.Errorf("a frame held twice: %q", msg)
	}
}
