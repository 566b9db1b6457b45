package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func xdpLines(skip string) []string {
	var l []string
	for i, t := range xdpTests {
		for j, p := range xdpPaths {
			cell := fmt.Sprintf("xdp: %s 64 %s %d.5 kpps", t, p, 10*i+j+1)
			if cell != skip {
				l = append(l, "[  1.234] "+cell)
			}
		}
	}
	return append(l, "xdp: ratio 1.75")
}

func TestParseXDP(t *testing.T) {
	tab, err := parseXDP(xdpLines(""))
	if err != nil {
		t.Fatal(err)
	}
	if tab.size != 64 || tab.ratio != 1.75 {
		t.Errorf("size %d ratio %v, want 64 and 1.75", tab.size, tab.ratio)
	}
	if got := tab.cells["l2fwd 64 zero-copy"]; got != 23.5 {
		t.Errorf("l2fwd zero-copy = %v, want 23.5", got)
	}
	var out strings.Builder
	tab.print(&out)
	if !strings.Contains(out.String(), "ratio: 1.75") || !strings.Contains(out.String(), "23.5") {
		t.Errorf("table lacks the ratio or a cell:\n%s", out.String())
	}
}

func TestParseXDPMissing(t *testing.T) {
	for name, lines := range map[string][]string{
		"no cell":  xdpLines("xdp: txpush 64 copy 12.5 kpps"),
		"no ratio": xdpLines("")[:9],
		"nothing":  nil,
	} {
		if _, err := parseXDP(lines); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestXDPQEMU boots two igb NICs on a hub and checks that every cell of
// the guest's table moved frames.
func TestXDPQEMU(t *testing.T) {
	needMachine(t, "igb")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	var log syncBuffer
	o := testOptions("e1000e", "./boot/init")
	o.timeout = 2 * time.Minute
	tab, err := xdpBoot(context.Background(), o, &log)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, log.String())
	}
	for k, v := range tab.cells {
		if v <= 0 {
			t.Errorf("%s: %.1f kpps", k, v)
		}
	}
	var out strings.Builder
	tab.print(&out)
	t.Logf("\n%s", out.String())
}
