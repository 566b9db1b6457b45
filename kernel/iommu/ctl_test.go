package iommu

import (
	"strings"
	"testing"
)

func TestCtl(t *testing.T) {
	r := qemuRig(t)
	for _, c := range []struct {
		cmd   string
		mode  Mode
		batch int
	}{
		{"deferred 32", Deferred, 32},
		{"strict", Strict, DefaultBatch},
		{"deferred", Deferred, DefaultBatch},
		{"flush", Deferred, DefaultBatch},
		{"clearfaults", Deferred, DefaultBatch},
	} {
		if err := r.u.Ctl(c.cmd); err != nil {
			t.Fatalf("%q: %v", c.cmd, err)
		}
		if m, b := r.u.Mode(); m != c.mode || b != c.batch {
			t.Errorf("after %q: mode %v batch %d, want %v %d", c.cmd, m, b, c.mode, c.batch)
		}
	}
	for _, bad := range []string{"", "turbo", "deferred many", "deferred 0", "strict 4", "deferred 1 2"} {
		if err := r.u.Ctl(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	s := r.u.Stats().String()
	for _, want := range []string{"mode deferred\n", "batch 256\n", "inv-global 1\n", "domains 0\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("stats text lacks %q:\n%s", want, s)
		}
	}
}
