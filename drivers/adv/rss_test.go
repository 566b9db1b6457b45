package adv

import (
	"testing"
)

// Toeplitz against the verification suite of Microsoft's RSS
// specification: IPv4 alone and with TCP ports.
func TestToeplitz(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want uint32
	}{
		{[]byte{66, 9, 149, 187, 161, 142, 100, 80}, 0x323e8fc2},
		{[]byte{66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6}, 0x51ccc178},
		{[]byte{199, 92, 111, 2, 65, 69, 140, 83, 0x37, 0x96, 0x12, 0x83}, 0xc626b0ea},
	} {
		if h := Toeplitz(c.in); h != c.want {
			t.Errorf("hash of %v: %#x, want %#x", c.in, h, c.want)
		}
	}
}

func TestSetupRSS(t *testing.T) {
	m, f := newMAC(&device{}, nil)
	m.SetupRSS(func(i int) uint32 { return uint32(i % 3) }, true)
	f.Check(t, map[uint32]uint32{
		RSSRK:      0xda565a6d, // key bytes 0-3, the first in the low byte
		RSSRK + 36: 0x5ca22bb0,
		RETA:       0x00020100, // entries 0-3: queues 0, 1, 2, 0
		RETA + 4:   0x01000201,
	})
	if f.Get(MRQC)&MRQC_ENABLE_RSS == 0 {
		t.Errorf("MRQC %#x: RSS not on", f.Get(MRQC))
	}
	m.SetupRSS(func(int) uint32 { return 0 }, false)
	f.Check(t, map[uint32]uint32{MRQC: 0, RETA: 0})
}
