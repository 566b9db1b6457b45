package pci

import (
	"strings"
	"testing"
)

var (
	e1000e = Driver{Name: "e1000e", IDs: []ID{{0x8086, 0x10d3}, {0x8086, 0x15b8}}}
	igb    = Driver{Name: "igb", IDs: []ID{{0x8086, 0x10c9}, {0x8086, 0x1533}}}
	igc    = Driver{Name: "igc", IDs: []ID{{0x8086, 0x15f3}, {0x8086, 0x125c}}}
)

func TestMatch(t *testing.T) {
	m, err := NewMatcher(e1000e, igb, igc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		vendor, device uint16
		want           string
	}{
		{0x8086, 0x10d3, "e1000e"},
		{0x8086, 0x1533, "igb"},
		{0x8086, 0x125c, "igc"},
		{0x8086, 0x100e, ""},
		{0x10ec, 0x10d3, ""}, // same device id, other vendor
	}
	for _, tt := range tests {
		got, ok := m.Match(tt.vendor, tt.device)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Match(%04x:%04x) = %q, %v; want %q", tt.vendor, tt.device, got, ok, tt.want)
		}
	}
	fns := []*Function{{Vendor: 0x8086, Device: 0x10c9}, {Vendor: 0x1af4, Device: 0x1041}, {Vendor: 0x8086, Device: 0x15f3}}
	if n := m.Bind(fns); n != 2 {
		t.Errorf("Bind bound %d", n)
	}
	if fns[0].Driver != "igb" || fns[1].Driver != "" || fns[2].Driver != "igc" {
		t.Errorf("bound %q %q %q", fns[0].Driver, fns[1].Driver, fns[2].Driver)
	}
}

func TestMatcherBadClaims(t *testing.T) {
	tests := []struct {
		name    string
		drivers []Driver
		want    string
	}{
		{"duplicate", []Driver{e1000e, {Name: "other", IDs: []ID{{0x8086, 0x15b8}}}}, "claimed by both e1000e and other"},
		{"no name", []Driver{{IDs: []ID{{0x8086, 1}}}}, "no name"},
		{"invalid vendor", []Driver{{Name: "x", IDs: []ID{{0xffff, 1}}}}, "invalid id ffff:0001"},
	}
	for _, tt := range tests {
		if _, err := NewMatcher(tt.drivers...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
