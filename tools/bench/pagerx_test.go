package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestPageRxTable runs pagerx short and checks what each row says the
// ring did, counts that hold on any machine: construct and build flip
// every page while the reader keeps up and copy copies every frame; a
// late reader makes construct give pages up and then copy, a few give-ups
// a thousand frames, where without the holdoff it gave up half its pages.
func TestPageRxTable(t *testing.T) {
	var out bytes.Buffer
	if err := runPageRx([]string{"-frames", "4096"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	type row struct{ copies, flips, released float64 }
	rows := map[string]row{}
	ratio := false
	for _, l := range strings.Split(out.String(), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "ratio:" {
			v, err := strconv.ParseFloat(f[1], 64)
			ratio = err == nil && v > 0
		}
		if len(f) == 8 { // "udp socket", "late reader": two words
			f = append([]string{f[0] + " " + f[1]}, f[2:]...)
		}
		if len(f) != 7 {
			continue
		}
		var r row
		var err error
		for i, p := range []*float64{&r.copies, &r.flips, &r.released} {
			if *p, err = strconv.ParseFloat(f[4+i], 64); err != nil {
				break
			}
		}
		if err == nil {
			rows[f[0]+"/"+f[1]] = r
		}
	}
	if len(rows) != 12 || !ratio {
		t.Fatalf("%d rows, ratio line %v:\n%s", len(rows), ratio, out.String())
	}
	for _, path := range []string{"dispatcher", "udp socket", "driver"} {
		for _, v := range []string{"construct", "build"} {
			if r := rows[path+"/"+v]; r.flips != 1000 || r.copies != 0 || r.released != 0 {
				t.Errorf("%s %s: %+v per 1k, want every page flipped", path, v, r)
			}
		}
		if r := rows[path+"/copy"]; r.copies != 1000 || r.flips != 0 {
			t.Errorf("%s copy: %+v per 1k, want every frame copied", path, r)
		}
	}
	if r := rows["late reader/construct"]; r.released == 0 || r.released > 10 || r.copies < 100 {
		t.Errorf("late reader construct: %+v per 1k, want a few give-ups and copies after them", r)
	}
	if r := rows["late reader/build"]; r.released != 0 {
		t.Errorf("late reader build: %+v per 1k: a built page is copied at the stack's first pull-up, never held", r)
	}
	if t.Failed() {
		t.Log(out.String())
	}
}
