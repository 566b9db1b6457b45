package adv

import "testing"

// The hash of RCTL.MO = 00 is destination bits [47:36]: the upper
// nibble of byte 4 and all of byte 5.
func TestMTAHash(t *testing.T) {
	for _, c := range []struct {
		mac  [6]byte
		want uint32
	}{
		{[6]byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}, 0x010},
		{[6]byte{0x33, 0x33, 0xff, 0x00, 0x12, 0x34}, 0x341},
		{[6]byte{0x33, 0x33, 0x00, 0x00, 0xf0, 0xff}, 0xfff},
	} {
		if got := MTAHash(c.mac); got != c.want {
			t.Errorf("MTAHash(%x) = %#x, want %#x", c.mac, got, c.want)
		}
	}
}
