package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// xdpRingFrames is what one igb RX ring holds: a cell that moved no more
// than two rings' worth stalled.
const xdpRingFrames = 255

func xdpLines(skip string) []string {
	var l []string
	for _, size := range xdpSizes {
		for i, t := range xdpTests {
			for j, p := range xdpPaths {
				cell := fmt.Sprintf("xdp: %s %d %s %d.5 kpps frames %d late %d", t, size, p, 10*i+j+1, 1000*(i+1)+size, 400+j)
				if !strings.HasPrefix(cell, skip) || skip == "" {
					l = append(l, "[  1.234] "+cell)
				}
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
	if tab.ratio != 1.75 {
		t.Errorf("ratio %v, want 1.75", tab.ratio)
	}
	if got := tab.cells["l2fwd 64 zero-copy"]; got != (xdpResult{kpps: 23.5, frames: 3064, late: 402}) {
		t.Errorf("l2fwd 64 zero-copy = %+v", got)
	}
	if got := tab.cells["rxdrop 1500 netstack"]; got != (xdpResult{kpps: 1.5, frames: 2500, late: 400}) {
		t.Errorf("rxdrop 1500 netstack = %+v", got)
	}
	var out strings.Builder
	tab.print(&out)
	for _, want := range []string{"ratio: 1.75", "64 B", "1500 B", "23.5"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestParseXDPMissing(t *testing.T) {
	all := xdpLines("")
	for name, lines := range map[string][]string{
		"no cell":       xdpLines("xdp: txpush 64 copy"),
		"no 1500 cell":  xdpLines("xdp: l2fwd 1500 netstack"),
		"no ratio":      all[:len(all)-1],
		"old line form": {"xdp: rxdrop 64 copy 1.2 kpps", "xdp: ratio 1.0"},
		"nothing":       nil,
	} {
		if _, err := parseXDP(lines); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestXDPQEMU boots two igb NICs on a hub and checks that every cell of
// the guest's table, at 64 and 1500 bytes, moved frames through its whole
// run: some in its second half, and, where a frame passes through an RX
// ring the program drains (every cell but the netstack path's sends),
// more than two rings' worth. The netstack path's txpush and l2fwd send
// through gVisor, whose large frames wait for the poll loop's reclaim
// under TCG: their count measures that, not a ring.
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
	for k, c := range tab.cells {
		ring := !strings.HasSuffix(k, " netstack") || strings.HasPrefix(k, "rxdrop ")
		if c.late == 0 || ring && c.frames <= 2*xdpRingFrames {
			t.Errorf("%s: %d frames, %d in the second half: stalled", k, c.frames, c.late)
		}
	}
	var out strings.Builder
	tab.print(&out)
	t.Logf("\n%s", out.String())
}
