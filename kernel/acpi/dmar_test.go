package acpi

import (
	"encoding/binary"
	"strings"
	"testing"
)

// dmarBody builds a DMAR body: host address width, flags, then structures.
func dmarBody(haw int, flags uint8, structs ...[]byte) []byte {
	b := make([]byte, dmarFixedLen)
	b[0] = byte(haw - 1)
	b[1] = flags
	for _, s := range structs {
		b = append(b, s...)
	}
	return b
}

func structure(typ uint16, fixed []byte, scopes ...[]byte) []byte {
	b := make([]byte, 4, 64)
	binary.LittleEndian.PutUint16(b[0:2], typ)
	b = append(b, fixed...)
	for _, s := range scopes {
		b = append(b, s...)
	}
	binary.LittleEndian.PutUint16(b[2:4], uint16(len(b)))
	return b
}

func drhd(flags uint8, seg uint16, base uint64, scopes ...[]byte) []byte {
	f := make([]byte, drhdFixedLen-4)
	f[0] = flags
	binary.LittleEndian.PutUint16(f[2:4], seg)
	binary.LittleEndian.PutUint64(f[4:12], base)
	return structure(dmarTypeDRHD, f, scopes...)
}

func rmrr(seg uint16, base, limit uint64, scopes ...[]byte) []byte {
	f := make([]byte, rmrrFixedLen-4)
	binary.LittleEndian.PutUint16(f[2:4], seg)
	binary.LittleEndian.PutUint64(f[4:12], base)
	binary.LittleEndian.PutUint64(f[12:20], limit)
	return structure(dmarTypeRMRR, f, scopes...)
}

func scope(typ, bus uint8, path ...PathEntry) []byte {
	b := []byte{typ, byte(scopeFixedLen + 2*len(path)), 0, 0, 0, bus}
	for _, p := range path {
		b = append(b, p.Dev, p.Fn)
	}
	return b
}

func TestParseDMAR(t *testing.T) {
	usb := scope(ScopePCIEndpoint, 0, PathEntry{0x1d, 0})
	gfx := scope(ScopePCIEndpoint, 0, PathEntry{2, 0})
	atsr := structure(2, make([]byte, 4))
	tbl := Build("DMAR", 1, dmarBody(46, DMARIntrRemap,
		drhd(0, 0, 0xfed90000, gfx),
		drhd(DRHDIncludePCIAll, 0, 0xfed91000, scope(ScopeIOAPIC, 0xf0, PathEntry{0x1f, 0})),
		rmrr(0, 0xdf000000, 0xdf7fffff, usb),
		atsr,
	))
	d, err := ParseDMAR(tbl)
	if err != nil {
		t.Fatal(err)
	}
	if d.HostAddrWidth != 46 || d.Flags != DMARIntrRemap {
		t.Errorf("width %d flags %#x, want 46 %#x", d.HostAddrWidth, d.Flags, DMARIntrRemap)
	}
	if len(d.Units) != 2 || len(d.Reserved) != 1 || d.Skipped != 1 {
		t.Fatalf("units %d rmrr %d skipped %d, want 2 1 1", len(d.Units), len(d.Reserved), d.Skipped)
	}
	u := d.Units[0]
	if u.Base != 0xfed90000 || u.Size != 4096 || u.IncludeAll() || len(u.Scopes) != 1 {
		t.Errorf("unit 0 = %+v", u)
	}
	if s := u.Scopes[0]; s.Type != ScopePCIEndpoint || s.StartBus != 0 || len(s.Path) != 1 || s.Path[0] != (PathEntry{2, 0}) {
		t.Errorf("unit 0 scope = %+v", s)
	}
	if u := d.Units[1]; !u.IncludeAll() || u.Base != 0xfed91000 || u.Scopes[0].Type != ScopeIOAPIC || u.Scopes[0].StartBus != 0xf0 {
		t.Errorf("unit 1 = %+v", u)
	}
	if r := d.Reserved[0]; r.Base != 0xdf000000 || r.Limit != 0xdf7fffff || r.Scopes[0].Path[0] != (PathEntry{0x1d, 0}) {
		t.Errorf("rmrr = %+v", r)
	}

	for _, c := range []struct {
		dev, fn uint8
		base    uint64
	}{{2, 0, 0xfed90000}, {3, 0, 0xfed91000}, {2, 1, 0xfed91000}} {
		got, ok := d.UnitFor(0, 0, c.dev, c.fn)
		if !ok || got.Base != c.base {
			t.Errorf("UnitFor(00:%02x.%x) = %#x %v, want %#x", c.dev, c.fn, got.Base, ok, c.base)
		}
	}
	if _, ok := d.UnitFor(1, 0, 2, 0); ok {
		t.Error("UnitFor found a unit on segment 1, which no unit covers")
	}
}

func TestParseDMARBad(t *testing.T) {
	good := dmarBody(48, 0, drhd(DRHDIncludePCIAll, 0, 0xfed90000))
	cases := []struct {
		name string
		tbl  []byte
		want string
	}{
		{"truncated header", Build("DMAR", 1, good)[:20], "truncated"},
		{"wrong signature", Build("MCFG", 1, good), "signature"},
		{"short body", Build("DMAR", 1, good[:8]), "body of 8 bytes"},
		{"width", Build("DMAR", 1, dmarBody(12, 0)), "address width"},
		{"structure header cut", Build("DMAR", 1, append(dmarBody(48, 0), 0, 0)), "truncated"},
		{"structure length past end", Build("DMAR", 1, append(dmarBody(48, 0), 0, 0, 0x40, 0)), "length 64"},
		{"structure length zero", Build("DMAR", 1, append(dmarBody(48, 0), 7, 0, 0, 0)), "length 0"},
		{"short DRHD", Build("DMAR", 1, dmarBody(48, 0, structure(dmarTypeDRHD, make([]byte, 4)))), "DRHD"},
		{"DRHD base zero", Build("DMAR", 1, dmarBody(48, 0, drhd(0, 0, 0))), "register base"},
		{"DRHD base unaligned", Build("DMAR", 1, dmarBody(48, 0, drhd(0, 0, 0xfed90010))), "register base"},
		{"scope too short", Build("DMAR", 1, dmarBody(48, 0, drhd(0, 0, 0x1000, []byte{1, 4, 0, 0}))), "device scope"},
		{"scope odd path", Build("DMAR", 1, dmarBody(48, 0, drhd(0, 0, 0x1000, []byte{1, 7, 0, 0, 0, 0, 3}))), "odd"},
		{"scope path range", Build("DMAR", 1, dmarBody(48, 0, drhd(0, 0, 0x1000, scope(1, 0, PathEntry{32, 0})))), "out of range"},
		{"RMRR limit", Build("DMAR", 1, dmarBody(48, 0, rmrr(0, 0x2000, 0x1000))), "limit"},
		{"short RMRR", Build("DMAR", 1, dmarBody(48, 0, structure(dmarTypeRMRR, make([]byte, 12)))), "RMRR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDMAR(c.tbl)
			if err == nil {
				t.Fatalf("parsed %+v, want error containing %q", d, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
	// A corrupted checksum is refused too.
	tbl := Build("DMAR", 1, good)
	tbl[len(tbl)-1] ^= 1
	if _, err := ParseDMAR(tbl); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("bad checksum: err = %v", err)
	}
}

func FuzzParseDMAR(f *testing.F) {
	f.Add(Build("DMAR", 1, dmarBody(48, 1, drhd(DRHDIncludePCIAll, 0, 0xfed90000))))
	f.Add(Build("DMAR", 1, dmarBody(39, 0,
		drhd(0, 0, 0xfed90000, scope(ScopePCIEndpoint, 0, PathEntry{2, 0})),
		rmrr(0, 0x1000, 0x1fff, scope(ScopePCIBridge, 0, PathEntry{1, 0}, PathEntry{0, 0})))))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Fix the checksum so the fuzzer explores the structures rather
		// than stopping at the header.
		if len(b) >= HeaderLen {
			n := int(binary.LittleEndian.Uint32(b[4:8]))
			if n < HeaderLen || n > len(b) {
				n = len(b)
			}
			var sum byte
			for _, c := range b[:n] {
				sum += c
			}
			b[9] -= sum
		}
		d, err := ParseDMAR(b)
		if err != nil {
			return
		}
		if d.HostAddrWidth < 32 || d.HostAddrWidth > 64 {
			t.Fatalf("accepted width %d", d.HostAddrWidth)
		}
		for _, u := range d.Units {
			if u.Base == 0 || u.Base&0xfff != 0 {
				t.Fatalf("accepted unit base %#x", u.Base)
			}
			for _, s := range u.Scopes {
				for _, p := range s.Path {
					if p.Dev > 31 || p.Fn > 7 {
						t.Fatalf("accepted path %+v", p)
					}
				}
			}
		}
		for _, r := range d.Reserved {
			if r.Limit < r.Base {
				t.Fatalf("accepted RMRR %+v", r)
			}
		}
	})
}

func TestDRHDIOAPIC(t *testing.T) {
	withID := func(b []byte, id uint8) []byte { b[4] = id; return b }
	d, err := ParseDMAR(Build("DMAR", 1, dmarBody(48, DMARIntrRemap,
		drhd(DRHDIncludePCIAll, 0, 0xfed90000,
			withID(scope(ScopePCIEndpoint, 0, PathEntry{3, 0}), 1),
			withID(scope(ScopeIOAPIC, 0xf0, PathEntry{0x1f, 0}), 2),
			withID(scope(ScopeIOAPIC, 0, PathEntry{0x1c, 0}, PathEntry{0, 0}), 3),
		))))
	if err != nil {
		t.Fatal(err)
	}
	u := d.Units[0]
	for _, c := range []struct {
		id  uint8
		sid uint16
		ok  bool
	}{
		{2, 0xf0f8, true}, // bus 0xf0, device 0x1f, function 0
		{1, 0, false},     // an endpoint with that enumeration id is no I/O APIC
		{3, 0, false},     // behind a bridge: not resolvable from the table alone
		{0, 0, false},
	} {
		sid, ok := u.IOAPIC(c.id)
		if sid != c.sid || ok != c.ok {
			t.Errorf("IOAPIC(%d) = %#x, %v; want %#x, %v", c.id, sid, ok, c.sid, c.ok)
		}
	}
}
