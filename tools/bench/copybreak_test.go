package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// The DMA and invalidation counts do not depend on the machine: check them
// cell by cell on a short run, with the table's shape and the ratio line.
func TestCopybreakTable(t *testing.T) {
	var out bytes.Buffer
	if err := runCopybreak([]string{"-frames", "512", "-batch", "64", "-invcost", "0"}, &out); err != nil {
		t.Fatal(err)
	}
	type counts struct{ maps, unmaps, inv float64 }
	cells := map[string]counts{}
	ratio := false
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "ratio:" {
			v, err := strconv.ParseFloat(f[1], 64)
			ratio = err == nil && v > 0
			continue
		}
		if len(f) != 9 || (f[0] != "unmap-always" && f[0] != "sync-no-unmap") {
			continue
		}
		var c counts
		var err error
		for i, p := range []*float64{&c.maps, &c.unmaps, &c.inv} {
			if *p, err = strconv.ParseFloat(f[6+i], 64); err != nil {
				t.Fatalf("row %q: %v", line, err)
			}
		}
		cells[strings.Join(f[:4], " ")] = c
	}
	if len(cells) != 36 || !ratio {
		t.Fatalf("%d cells, ratio line %v:\n%s", len(cells), ratio, out.String())
	}
	for key, c := range cells {
		f := strings.Fields(key)
		mode, mmu := f[0], f[1]
		cb, _ := strconv.Atoi(f[2])
		size, _ := strconv.Atoi(f[3])
		copied := size < cb
		want := counts{1000, 1000, 0}
		if mode == "sync-no-unmap" && copied {
			want = counts{0, 0, 0} // the buffer stays mapped and is re-armed
		}
		switch {
		case want.unmaps == 0:
		case mmu == "strict":
			want.inv = 1000 // one invalidation per unmap
		case mmu == "deferred":
			want.inv = 16 // one per 64 unmaps, printed rounded
		}
		if c != want {
			t.Errorf("%s: maps %v unmaps %v inv %v per 1k, want %v", key, c.maps, c.unmaps, c.inv, want)
		}
	}
}

func TestCopybreakFlags(t *testing.T) {
	for _, args := range [][]string{{"-batch", "0"}, {"-batch", "500"}, {"-invcost", "-1us"}, {"extra"}, {"-nosuch"}} {
		if err := runCopybreak(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
