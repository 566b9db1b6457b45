package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/qemu"
)

func TestPhasesOf(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	lines := []qemu.Line{
		{At: ms(10), Text: "SeaBIOS (version 1.16.3)"},
		{At: ms(100), Text: "metal: shim started"},
		{At: ms(130), Text: "metal: /init 14664 KiB at 493220 (loaded in 9 us), 975 MiB free, 30 us in the shim; starting"},
		{At: ms(140), Text: "ether0: dhcp 10.0.2.15/24"}, // before its turn: not this phase's end
		{At: ms(280), Text: "Booting from ROM..ether9: booting (kernel up 0.000s)"},
		{At: ms(300), Text: "iommu: translation on, 4-level", CPU: ms(250)},
		{At: ms(360), Text: "ether0: link up 1000 Mb/s full duplex", CPU: ms(290)},
		{At: ms(365), Text: "ether0: link up 1000 Mb/s full duplex"},
		{At: ms(400), Text: "ether9: up in 0.120s"},
		{At: ms(420), Text: "http: listening :80"}, // DHCP and HTTP run side by side
		{At: ms(450), Text: "ether0: dhcp 10.0.2.15/24, no router offered"},
	}
	ps := phasesOf(lines)
	want := []struct{ at, since int }{{100, 100}, {130, 30}, {280, 150}, {300, 20}, {360, 60}, {400, 100}, {450, 50}, {420, 20}}
	if len(ps) != len(want) {
		t.Fatalf("%d phases, want %d: %+v", len(ps), len(want), ps)
	}
	for i, w := range want {
		if ps[i].at != ms(w.at) || ps[i].since != ms(w.since) {
			t.Errorf("phase %d (%s): at %v took %v, want %v and %v", i, ps[i].name, ps[i].at, ps[i].since, ms(w.at), ms(w.since))
		}
	}
	// The Linux-hosted platform prints no shim lines: its first phase is
	// everything up to Go's main.
	ps = phasesOf(lines[4:])
	if len(ps) != 6 || ps[0].since != ms(280) {
		t.Errorf("without the shim's lines: %+v", ps)
	}
	if ps := phasesOf(lines); ps[4].cpu != ms(40) || ps[3].cpu != 0 || ps[2].cpu != 0 {
		t.Errorf("cpu: link up %v (want 40ms), VT-d %v and main %v (want 0: not measured)", ps[4].cpu, ps[3].cpu, ps[2].cpu)
	}
	// igb's link comes up after the stack and the HTTP server: the
	// stages after VT-d are still found.
	igb := append([]qemu.Line{}, lines[:6]...)
	igb = append(igb, lines[8], lines[9], lines[10], lines[6])
	if ps := phasesOf(igb); len(ps) != 8 || ps[4].at != ms(360) || ps[5].since != ms(100) {
		t.Errorf("link up last: %+v", ps)
	}
	var b strings.Builder
	printPhases(&b, "qemu start", phasesOf(lines))
	if !strings.Contains(b.String(), "DHCP lease") || strings.Count(b.String(), "\n") != 9 {
		t.Errorf("table:\n%s", b.String())
	}
}
