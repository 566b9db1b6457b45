package dhcp

import (
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		bits int // -1: no mask
		ok   bool
	}{
		{"192.0.2.50", 24, true},
		{"10.0.2.15", 8, true},
		{"192.0.2.50", -1, true},
		{"192.0.2.0", 31, true}, // RFC 3021
		{"192.0.2.1", 31, true},
		{"192.0.2.0", 24, false},
		{"192.0.2.255", 24, false},
		{"192.0.2.50", 32, false},
		{"192.0.2.50", 0, false},
		{"0.0.0.0", -1, false},
		{"0.1.2.3", 8, false},
		{"127.0.0.1", 8, false},
		{"169.254.1.1", 16, false},
		{"224.0.0.1", 24, false},
		{"239.255.255.250", -1, false},
		{"240.0.0.1", 8, false},
		{"255.255.255.255", -1, false},
	} {
		var mask net.IPMask
		if tc.bits >= 0 {
			mask = net.CIDRMask(tc.bits, 32)
		}
		err := CheckAddr(netip.MustParseAddr(tc.addr), mask)
		if (err == nil) != tc.ok {
			t.Errorf("%s/%d: %v, want ok %v", tc.addr, tc.bits, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadAddr) {
			t.Errorf("%s/%d: %v does not wrap ErrBadAddr", tc.addr, tc.bits, err)
		}
	}
	if err := CheckAddr(netip.MustParseAddr("192.0.2.1"), net.IPMask{255, 0, 255, 0}); err == nil {
		t.Errorf("a non-contiguous mask was taken")
	}
}
