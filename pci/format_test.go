package pci

import "testing"

func TestDescribe(t *testing.T) {
	bus := topology()
	fns, err := Enumerate(bus, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NewMatcher(Driver{Name: "e1000e", IDs: []ID{{0x8086, 0x10d3}}})
	m.Bind(fns)
	tests := []struct {
		a    Addr
		want string
	}{
		{Addr{Bus: 2, Dev: 3}, "pci 02:03.0 8086:10d3 e1000e\n" +
			"\tclass 020000 network/ethernet rev 01 subsystem 0000:0000\n" +
			"\tbar0 mem32 0xfebc0000 size 0x20000\n" +
			"\tbar3 mem32 0xfebe0000 size 0x4000\n" +
			"\tcaps pm@40 msi@48 pcie@58 msix@6c aer@100 dsn@140"},
		{Addr{Dev: 1}, "pci 00:01.0 8086:244e\n" +
			"\tclass 060400 bridge/pci rev 01\n" +
			"\tbus primary 00 secondary 01 subordinate 02"},
		{Addr{Dev: 4}, "pci 00:04.0 8086:10c9\n" +
			"\tclass 020000 network/ethernet rev 01 subsystem 0000:0000\n" +
			"\tbar0 mem64 0xfe000000 size 0x20000"},
	}
	for _, tt := range tests {
		var f *Function
		for _, g := range fns {
			if g.Addr == tt.a {
				f = g
			}
		}
		if f == nil {
			t.Fatalf("%v not found", tt.a)
		}
		if got := f.Describe(); got != tt.want {
			t.Errorf("Describe:\n%s\nwant:\n%s", got, tt.want)
		}
	}
}

func TestClassName(t *testing.T) {
	for class, want := range map[uint32]string{
		0x020000: "network/ethernet", 0x060400: "bridge/pci", 0x010802: "storage/nvme",
		0x0c0330: "serial-bus/usb", 0x028000: "network/other", 0x04ff00: "multimedia/ff",
		0xff0000: "unassigned", 0x400000: "class-40",
	} {
		if got := ClassName(class); got != want {
			t.Errorf("ClassName(%06x) = %q, want %q", class, got, want)
		}
	}
	if s := (Capability{ID: 0x33, Offset: 0x50}).String(); s != "cap33@50" {
		t.Errorf("unknown capability: %q", s)
	}
	if s := (Capability{ID: 0x42, Offset: 0x200, Extended: true}).String(); s != "ext0042@200" {
		t.Errorf("unknown extended capability: %q", s)
	}
	if s := (BAR{Index: 2, Kind: BARMem64, Prefetchable: true, Addr: 0x40_0000_0000}).String(); s != "bar2 mem64 pref 0x4000000000" {
		t.Errorf("unsized BAR: %q", s)
	}
}
