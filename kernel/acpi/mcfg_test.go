package acpi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// mcfgTable builds an MCFG with raw allocation entries, bypassing Marshal so
// tests can describe tables Marshal would never produce.
func mcfgTable(entries ...[]byte) []byte {
	body := make([]byte, mcfgReservedLen)
	for _, e := range entries {
		body = append(body, e...)
	}
	return Build("MCFG", 1, body)
}

func entry(base uint64, seg uint16, start, end uint8) []byte {
	e := make([]byte, mcfgAllocLen)
	binary.LittleEndian.PutUint64(e[0:], base)
	binary.LittleEndian.PutUint16(e[8:], seg)
	e[10], e[11] = start, end
	return e
}

func TestParseMCFG(t *testing.T) {
	b := mcfgTable(entry(0xb0000000, 0, 0, 0xff), entry(0xe0000000, 1, 0x10, 0x1f))
	m, err := ParseMCFG(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []MCFGAllocation{
		{Base: 0xb0000000, Segment: 0, StartBus: 0, EndBus: 0xff},
		{Base: 0xe0000000, Segment: 1, StartBus: 0x10, EndBus: 0x1f},
	}
	if len(m.Allocations) != len(want) {
		t.Fatalf("got %d allocations, want %d", len(m.Allocations), len(want))
	}
	for i, a := range m.Allocations {
		if a != want[i] {
			t.Errorf("allocation %d = %+v, want %+v", i, a, want[i])
		}
	}
	if got := m.Allocations[0].Size(); got != 256<<20 {
		t.Errorf("size of a 256-bus window = %#x", got)
	}
	if got := m.Allocations[1].Start(); got != 0xe0000000+0x10<<20 {
		t.Errorf("start of bus 0x10 = %#x", got)
	}
	if a, ok := m.Find(1, 0x15); !ok || a.Base != 0xe0000000 {
		t.Errorf("Find(1, 0x15) = %v, %v", a, ok)
	}
	for _, q := range []struct {
		seg uint16
		bus uint8
	}{{1, 0x0f}, {1, 0x20}, {2, 0}} {
		if a, ok := m.Find(q.seg, q.bus); ok {
			t.Errorf("Find(%d, %#x) found %v", q.seg, q.bus, a)
		}
	}
	if !bytes.Equal(m.Marshal(), b) {
		t.Errorf("Marshal does not reproduce the table")
	}
}

func TestParseMCFGEmpty(t *testing.T) {
	m, err := ParseMCFG(mcfgTable())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Allocations) != 0 {
		t.Fatalf("empty table gave %v", m.Allocations)
	}
}

func TestParseMCFGBad(t *testing.T) {
	good := mcfgTable(entry(0xb0000000, 0, 0, 0xff))
	badSum := bytes.Clone(good)
	badSum[9]++
	longLen := bytes.Clone(good)
	binary.LittleEndian.PutUint32(longLen[4:], uint32(len(good)+16))
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"header only, short", good[:20], "truncated"},
		{"wrong signature", Build("DMAR", 1, make([]byte, 8)), "signature"},
		{"bad checksum", badSum, "checksum"},
		{"length beyond data", longLen, "length field"},
		{"no reserved bytes", Build("MCFG", 1, make([]byte, 4)), "reserved"},
		{"truncated entry", Build("MCFG", 1, append(make([]byte, 8), entry(0xb0000000, 0, 0, 1)[:10]...)), "truncated entry"},
		{"reversed buses", mcfgTable(entry(0xb0000000, 0, 5, 4)), "above end bus"},
		{"unaligned base", mcfgTable(entry(0xb0080000, 0, 0, 0)), "not 1 MiB aligned"},
		{"wrapping window", mcfgTable(entry(0xfffffffffff00000, 0, 0, 1)), "wraps"},
		{"overlap", mcfgTable(entry(0xb0000000, 0, 0, 0x7f), entry(0xc0000000, 0, 0x7f, 0xff)), "overlaps allocation 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMCFG(tt.b)
			if err == nil {
				t.Fatalf("parsed %+v, want error containing %q", m, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// The same segment may appear twice when its buses do not overlap, and a
// window that ends exactly at the top of the address space does not wrap.
func TestParseMCFGEdges(t *testing.T) {
	b := mcfgTable(entry(0xb0000000, 0, 0, 0x7f), entry(0xc0000000, 0, 0x80, 0xff), entry(0xfffffffff0000000, 3, 0, 0xff))
	m, err := ParseMCFG(b)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := m.Find(0, 0x80); !ok || a.Base != 0xc0000000 {
		t.Errorf("Find(0, 0x80) = %v, %v", a, ok)
	}
}

// The host's own table, when the host has one: a real firmware table must
// parse and describe at least one window.
func TestParseMCFGHost(t *testing.T) {
	b, err := os.ReadFile("/sys/firmware/acpi/tables/MCFG")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		t.Skipf("host has no readable ACPI MCFG table: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMCFG(b)
	if err != nil {
		t.Fatalf("host MCFG: %v", err)
	}
	if len(m.Allocations) == 0 {
		t.Fatal("host MCFG describes no ECAM window")
	}
	for _, a := range m.Allocations {
		t.Logf("host %v", a)
	}
}

func FuzzParseMCFG(f *testing.F) {
	f.Add(mcfgTable(entry(0xb0000000, 0, 0, 0xff)))
	f.Add(mcfgTable(entry(0xb0000000, 0, 0, 0x7f), entry(0xc0000000, 0, 0x80, 0xff)))
	f.Add(mcfgTable())
	f.Add([]byte("MCFG"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMCFG(b)
		if err != nil {
			return
		}
		// Whatever parses must survive a round trip unchanged.
		m2, err := ParseMCFG(m.Marshal())
		if err != nil {
			t.Fatalf("re-parsing a marshalled table: %v", err)
		}
		if len(m2.Allocations) != len(m.Allocations) {
			t.Fatalf("round trip changed the allocation count: %d -> %d", len(m.Allocations), len(m2.Allocations))
		}
		for i := range m.Allocations {
			if m.Allocations[i] != m2.Allocations[i] {
				t.Fatalf("round trip changed allocation %d: %v -> %v", i, m.Allocations[i], m2.Allocations[i])
			}
			if m.Allocations[i].Size() == 0 {
				t.Fatalf("allocation %d has zero size", i)
			}
		}
	})
}
