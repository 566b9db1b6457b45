package iommu

import (
	"slices"
	"testing"
)

func TestDecodeCaps(t *testing.T) {
	cases := []struct {
		name      string
		cap, ecap uint64
		want      Caps
		levels    []int
	}{
		{
			// QEMU intel-iommu defaults, as read from a guest.
			name: "qemu", cap: 0x00d2008c222f0606, ecap: 0xf00f4a,
			want: Caps{Domains: 1 << 16, SAGAW: 6, MGAW: 48, FRO: 0x220, SLLPS: 3, PSI: true,
				NFR: 1, MAMV: 18, DWD: true, DRD: true, QI: true, IR: true, PT: true, IRO: 0xf0},
			levels: []int{4, 3},
		},
		{
			// aw-bits=39: 3-level only, MGAW 39.
			name: "qemu-aw39", cap: 0x00d2008c22260206, ecap: 0xf00f4b,
			want: Caps{Domains: 1 << 16, SAGAW: 2, MGAW: 39, FRO: 0x220, SLLPS: 3, PSI: true,
				NFR: 1, MAMV: 18, DWD: true, DRD: true, Coherent: true, QI: true, IR: true, PT: true, IRO: 0xf0},
			levels: []int{3},
		},
		{
			// ND=2, RWBF, CM, no PSI, no large pages, 8 fault records.
			name: "small", cap: 2 | 1<<4 | 1<<7 | 4<<8 | 47<<16 | 0x30<<24 | 7<<40, ecap: 0x10 << 8,
			want:   Caps{Domains: 256, RWBF: true, CM: true, SAGAW: 4, MGAW: 48, FRO: 0x300, NFR: 8, IRO: 0x100},
			levels: []int{4},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DecodeCaps(0x10, c.cap, c.ecap)
			c.want.Version, c.want.CAP, c.want.ECAP = 0x10, c.cap, c.ecap
			if got != c.want {
				t.Errorf("DecodeCaps:\n got %+v\nwant %+v", got, c.want)
			}
			if l := got.Levels(); !slices.Equal(l, c.levels) {
				t.Errorf("levels %v, want %v", l, c.levels)
			}
			if err := got.check(); err != nil {
				t.Errorf("check: %v", err)
			}
		})
	}
}

func TestCapsCheck(t *testing.T) {
	for _, c := range []struct {
		name      string
		cap, ecap uint64
	}{
		{"all ones", ^uint64(0), ^uint64(0)},
		{"zero", 0, 0},
		{"no sagaw", 0x00d2008c22200006, 0xf00f4a},
		{"no iro", 0x00d2008c222f0606, 0x4a},
	} {
		if err := DecodeCaps(0x10, c.cap, c.ecap).check(); err == nil {
			t.Errorf("%s: CAP %#x ECAP %#x accepted", c.name, c.cap, c.ecap)
		}
	}
}
