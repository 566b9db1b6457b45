package metal

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ether9/ether9/pci"
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
	if _, err := LocalAPIC(); !errors.Is(err, ErrNotMetal) {
		t.Errorf("LocalAPIC: %v, want ErrNotMetal", err)
	}
}

// MapBAR maps what enumeration found and nothing else: an I/O BAR, an
// unsized one or an index past the six is an error naming it, before any
// window is asked for.
func TestMapBARNeedsASizedMemoryBAR(t *testing.T) {
	f := &pci.Function{Addr: pci.Addr{Dev: 1}}
	f.BARs[0] = pci.BAR{Index: 0, Kind: pci.BARIO, Addr: 0xc000, Size: 0x20}
	f.BARs[1] = pci.BAR{Index: 1, Kind: pci.BARMem32, Addr: 0x40000000}
	f.BARs[2] = pci.BAR{Index: 2, Kind: pci.BARMem32, Addr: 0x40020000, Size: 0x20000}
	for _, bar := range []int{0, 1, -1, 6} {
		if _, err := MapBAR(f, bar); err == nil || !strings.Contains(err.Error(), "not a sized memory BAR") {
			t.Errorf("BAR%d: %v, want not a sized memory BAR", bar, err)
		}
	}
	if Running() {
		return
	}
	// A good BAR goes on to the window, which only the shim has.
	if _, err := MapBAR(f, 2); !errors.Is(err, ErrNotMetal) {
		t.Errorf("BAR2: %v, want ErrNotMetal", err)
	}
}

// Text names every counter once, each with its own value: a field left
// out, or two names given one value, shows.
func TestStatsText(t *testing.T) {
	s := Stats{1, 2, 3, 4, 5, 6, 7, 8}
	lines := strings.Split(strings.TrimSuffix(s.Text(), "\n"), "\n")
	if n := reflect.TypeOf(s).NumField(); len(lines) != n {
		t.Fatalf("%d lines for %d counters:\n%s", len(lines), n, s.Text())
	}
	for i, l := range lines {
		name, v, ok := strings.Cut(l, " ")
		if !ok || name == "" || v != strconv.Itoa(i+1) {
			t.Errorf("line %d: %q, want a name and %d", i, l, i+1)
		}
	}
}
