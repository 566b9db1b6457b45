package nicmodel

import (
	"testing"

	"github.com/ether9/ether9/kernel/sim"
)

// capAt finds capability id in c's list.
func capAt(t *testing.T, c *sim.ConfigSpace, id uint8) int {
	t.Helper()
	p, err := c.Read(0x34, 1)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; p != 0 && n < 48; n++ {
		v, err := c.Read(int(p), 2)
		if err != nil {
			t.Fatal(err)
		}
		if uint8(v) == id {
			return int(p)
		}
		p = v >> 8
	}
	t.Fatalf("capability %#x not in the list", id)
	return 0
}

func read(t *testing.T, c *sim.ConfigSpace, off, size int) uint32 {
	t.Helper()
	v, err := c.Read(off, size)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCapabilities(t *testing.T) {
	c := sim.NewConfigSpace(0x8086, 0x10d3, ClassEthernet, 0)
	AddPM(c)
	AddMSI(c, 0x0180, 20)
	AddMSIX(c, 5, 3, 0x2000, nil)
	AddPCIe(c, PCIe{DevCap: 0x8002, LinkCap: 0xc41, LinkStatus: 0x41})
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if pm := capAt(t, c, CapPM); read(t, c, pm+2, 2) != 0xc823 {
		t.Errorf("PMC = %#x", read(t, c, pm+2, 2))
	}
	if msi := capAt(t, c, CapMSI); read(t, c, msi+2, 2) != 0x0180 {
		t.Errorf("MSI control = %#x", read(t, c, msi+2, 2))
	}
	x := capAt(t, c, CapMSIX)
	if got := read(t, c, x+2, 2) & 0x7ff; got != 4 {
		t.Errorf("MSI-X table size field %d, want 4 (5 vectors)", got)
	}
	if tbl, pba := read(t, c, x+4, 4), read(t, c, x+8, 4); tbl != 3 || pba != 0x2003 {
		t.Errorf("MSI-X table %#x PBA %#x, want BIR 3 at 0 and 0x2000", tbl, pba)
	}
	e := capAt(t, c, CapPCIe)
	for _, f := range []struct {
		off, size int
		want      uint32
	}{{0x02, 2, 2}, {0x04, 4, 0x8002}, {0x0c, 4, 0xc41}, {0x12, 2, 0x41}} {
		if got := read(t, c, e+f.off, f.size); got != f.want {
			t.Errorf("PCIe cap +%#x = %#x, want %#x", f.off, got, f.want)
		}
	}
}

func TestDSN(t *testing.T) {
	for _, tc := range []struct {
		mac    [6]byte
		lo, hi uint32
	}{
		{[6]byte{0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc}, 0xfeaabbcc, 0x001b21ff},
		{[6]byte{}, 0, 0},
	} {
		c := sim.NewConfigSpace(0x8086, 0x15f3, ClassEthernet, 0)
		off := -1
		AddDSN(c, tc.mac)
		for p := 0x100; p != 0; p = int(read(t, c, p, 4) >> 20) {
			if read(t, c, p, 2) == ExtDSN {
				off = p
				break
			}
		}
		if off < 0 {
			t.Fatalf("%x: no DSN capability", tc.mac)
		}
		if lo, hi := read(t, c, off+4, 4), read(t, c, off+8, 4); lo != tc.lo || hi != tc.hi {
			t.Errorf("%x: DSN %#08x %#08x, want %#08x %#08x", tc.mac, hi, lo, tc.hi, tc.lo)
		}
	}
}
