package metal

import (
	"errors"
	"testing"
)

// On Linux the shim's calls do not exist: everything must say so rather
// than touch memory by physical address. (The calls themselves are
// exercised in ring 0 by boot's TestBootMetalRuntime.)
func TestNotMetalOnLinux(t *testing.T) {
	if Running() {
		t.Skip("running on the shim")
	}
	if _, err := NewMemory(); !errors.Is(err, ErrNotMetal) {
		t.Errorf("NewMemory: %v, want ErrNotMetal", err)
	}
	if _, err := Table("MCFG"); !errors.Is(err, ErrNotMetal) {
		t.Errorf("Table: %v, want ErrNotMetal", err)
	}
	if _, err := Window(0xb0000000, 4096); !errors.Is(err, ErrNotMetal) {
		t.Errorf("Window: %v, want ErrNotMetal", err)
	}
	if _, err := MapPhys(0xfed90000, 4096); !errors.Is(err, ErrNotMetal) {
		t.Errorf("MapPhys: %v, want ErrNotMetal", err)
	}
}
