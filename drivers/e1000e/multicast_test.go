package e1000e

import (
	"testing"
)

// The hash is destination address bits 47:36 (RCTL.MO = 00): the high
// nibble of byte 4 then all of byte 5.
func TestMTAHash(t *testing.T) {
	for _, c := range []struct {
		mac  [6]byte
		want uint32
	}{
		{[6]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc}, 0xbc9},
		{[6]byte{0x33, 0x33, 0, 0, 0, 1}, 0x010},
		{[6]byte{0x33, 0x33, 0xff, 0x12, 0x34, 0x56}, 0x563},
		{[6]byte{0x01, 0, 0x5e, 0, 0, 0xfb}, 0xfb0},
	} {
		if got := mtaHash(c.mac); got != c.want {
			t.Errorf("mtaHash(%x) = %#x, want %#x", c.mac, got, c.want)
		}
	}
}
