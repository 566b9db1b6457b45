//go:build linux

package linuxhost

import "testing"

func TestLockdownMode(t *testing.T) {
	for in, want := range map[string]string{
		"[none] integrity confidentiality\n": "none",
		"none [integrity] confidentiality\n": "integrity",
		"none integrity [confidentiality]":   "confidentiality",
		"":                                   "",
		"[] none":                            "",
	} {
		if got := lockdownMode(in); got != want {
			t.Errorf("lockdownMode(%q) = %q, want %q", in, got, want)
		}
	}
}
