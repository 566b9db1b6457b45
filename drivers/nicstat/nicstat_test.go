package nicstat

import (
	"testing"
)

// regs is a bank of read-to-clear counters.
type regs map[uint32]uint32

func (r regs) Read32(off uint32) uint32 {
	v := r[off]
	delete(r, off)
	return v
}
func (r regs) Write32(off uint32, v uint32) { r[off] = v }
func (r regs) Read64(off uint32) uint64     { return uint64(r.Read32(off)) | uint64(r.Read32(off+4))<<32 }
func (r regs) Write64(off uint32, v uint64) { r[off], r[off+4] = uint32(v), uint32(v>>32) }

func collect(each func(func(string, uint64))) map[string]uint64 {
	m := map[string]uint64{}
	each(func(name string, v uint64) { m[name] = v })
	return m
}

func TestTableOmitsAbsent(t *testing.T) {
	all := Table()
	less := Table(SYMERRS, SEC, TSCTFC)
	if len(all)-len(less) != 3 {
		t.Fatalf("Table less three has %d counters, full %d", len(less), len(all))
	}
	for _, c := range less {
		if c.Lo == SYMERRS || c.Lo == SEC || c.Lo == TSCTFC {
			t.Errorf("%s still present", c.Name)
		}
	}
	seen := map[string]bool{}
	for _, c := range all {
		if seen[c.Name] {
			t.Errorf("%s listed twice", c.Name)
		}
		seen[c.Name] = true
	}
}

func TestHardwareAccumulates(t *testing.T) {
	var h Hardware
	h.Init(Table(), 0xc030, 0xc070)
	r := regs{GPRC: 5, GORCL: 0xffffffff, GORCH: 1, 0xc070: 7}
	h.Gather(r)
	r[GPRC], r[GORCL], r[0xc070] = 3, 1, 2
	h.Gather(r)
	got := collect(h.Each)
	want := map[string]uint64{
		"good_packets_rx": 8,
		"good_octets_rx":  0x1ffffffff + 1,
		"q0_rx_drops":     0,
		"q1_rx_drops":     9,
		"crc_errors":      0,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %#x, want %#x", name, got[name], v)
		}
	}
	if len(got) != len(Table())+2 {
		t.Errorf("%d totals, want %d", len(got), len(Table())+2)
	}
}

func TestSumKeepsFirstSeenOrder(t *testing.T) {
	var s Sum
	s.Add("b", 1)
	s.Add("a", 2)
	s.Add("b", 3)
	var names []string
	var vals []uint64
	s.Each(func(name string, v uint64) { names = append(names, name); vals = append(vals, v) })
	if len(names) != 2 || names[0] != "b" || names[1] != "a" || vals[0] != 4 || vals[1] != 2 {
		t.Fatalf("got %v %v, want [b a] [4 2]", names, vals)
	}
}
