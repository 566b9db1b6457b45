package e1000e

import (
	"testing"

	"github.com/ether9/ether9/drivers/nic"
)

func TestIDTable(t *testing.T) {
	seen := map[uint16]bool{}
	perType := map[MACType]int{}
	i219 := 0
	for _, id := range IDs {
		if seen[id.Device] {
			t.Errorf("device %04x listed twice", id.Device)
		}
		seen[id.Device] = true
		if _, ok := macInfo[id.Type]; !ok {
			t.Errorf("device %04x: MAC type %v has no info", id.Device, id.Type)
		}
		perType[id.Type]++
		if len(id.Name) >= 4 && id.Name[:4] == "I219" {
			i219++
		}
	}
	if len(IDs) < 110 {
		t.Errorf("%d ids; the family has about 115", len(IDs))
	}
	if i219 != 55 {
		t.Errorf("%d I219 ids, want 55", i219)
	}
	for typ := range macNames {
		if perType[typ] == 0 {
			t.Errorf("MAC type %v has no device id", typ)
		}
	}
	for _, c := range []struct {
		dev  uint16
		want MACType
	}{
		{0x10D3, Mac82574}, {0x15B7, MacPCHSPT}, {0x156F, MacPCHSPT}, {0x15B9, MacPCHSPT},
		{0x15BB, MacPCHCNP}, {0x153A, MacPCHLPT}, {0x10F5, MacICH9}, {0x1525, MacICH10},
		{0x150C, Mac82583}, {0x1096, Mac80003es2lan}, {0x57B9, MacPCHPTP},
	} {
		id, info, err := Lookup(VendorIntel, c.dev)
		if err != nil || id.Type != c.want || info.Type != c.want {
			t.Errorf("%04x: %v %v %v, want %v", c.dev, id.Type, info.Type, err, c.want)
		}
	}
	for _, c := range []struct{ v, d uint16 }{{VendorIntel, 0x10C9}, {VendorIntel, 0x15F3}, {0x10EC, 0x10D3}} {
		if _, _, err := Lookup(c.v, c.d); err == nil {
			t.Errorf("%04x:%04x accepted", c.v, c.d)
		}
	}
}

func TestTSORules(t *testing.T) {
	up := func(speed int) nic.Link { return nic.Link{Up: true, SpeedMbps: speed, FullDuplex: true} }
	spt := macInfo[MacPCHSPT]
	m74 := macInfo[Mac82574]
	cnp := macInfo[MacPCHCNP]
	cases := []struct {
		info MACInfo
		mode TSOMode
		link nic.Link
		want bool
	}{
		{spt, TSOAuto, up(1000), false},
		{spt, TSOOn, up(1000), false},
		{spt, TSOOn, up(100), false},
		{spt, TSOAuto, nic.Link{}, false},
		{m74, TSOAuto, up(1000), true},
		{m74, TSOAuto, up(100), false},
		{m74, TSOAuto, up(10), false},
		{m74, TSOOn, up(100), true},
		{m74, TSOOff, up(1000), false},
		{m74, TSOAuto, nic.Link{}, true},
		{cnp, TSOAuto, up(1000), true},
		{cnp, TSOAuto, up(100), false},
		{cnp, TSOOn, up(10), true},
	}
	for _, c := range cases {
		if got, why := useTSO(c.info, c.mode, c.link); got != c.want {
			t.Errorf("%v %v %+v: tso %v (%s), want %v", c.info.Type, c.mode, c.link, got, why, c.want)
		}
	}
}

func TestLinkFromStatus(t *testing.T) {
	cases := []struct {
		status uint32
		want   nic.Link
	}{
		{0x00080283, nic.Link{Up: true, SpeedMbps: 1000, FullDuplex: true}}, // QEMU's value
		{STATUS_LU | STATUS_FD | 1<<STATUS_SPEED_SHIFT, nic.Link{Up: true, SpeedMbps: 100, FullDuplex: true}},
		{STATUS_LU, nic.Link{Up: true, SpeedMbps: 10}},
		{STATUS_FD | 2<<STATUS_SPEED_SHIFT, nic.Link{}},
	}
	for _, c := range cases {
		if got := linkFromStatus(c.status); got != c.want {
			t.Errorf("STATUS %#x: %+v, want %+v", c.status, got, c.want)
		}
	}
}
