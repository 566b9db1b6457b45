package pci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sysfsTree writes config files the way Linux lays them out: 4096 bytes
// for PCI Express functions, 256 for the others; and resource files (13
// lines of "start end flags": six BARs, the ROM, SR-IOV and bridge windows)
// with the ranges in res.
func sysfsTree(t *testing.T, fns map[Addr]*fakeFn, size map[Addr]int, res map[Addr][6][2]uint64) string {
	t.Helper()
	root := t.TempDir()
	for a, f := range fns {
		dir := filepath.Join(root, SysfsName(a))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		n := ExtConfigSize
		if s, ok := size[a]; ok {
			n = s
		}
		if err := os.WriteFile(filepath.Join(dir, "config"), f.cfg[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		var lines strings.Builder
		r := res[a]
		for i := 0; i < 13; i++ {
			var start, end, flags uint64
			if i < 6 && r[i][1] != 0 {
				start, end, flags = r[i][0], r[i][0]+r[i][1]-1, 0x40200
			}
			fmt.Fprintf(&lines, "0x%016x 0x%016x 0x%016x\n", start, end, flags)
		}
		if err := os.WriteFile(filepath.Join(dir, "resource"), []byte(lines.String()), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestSysfs(t *testing.T) {
	host := newFakeFn(0x8086, 0x29c0, 0x060000, HeaderNormal)
	nic := nicFn()
	other := newFakeFn(0x8086, 0x15f3, 0x020000, HeaderNormal)
	root := sysfsTree(t,
		map[Addr]*fakeFn{{}: host, {Dev: 2}: nic, {Seg: 1, Bus: 0x20, Dev: 0x1f}: other},
		map[Addr]int{{}: ConfigSize},
		map[Addr][6][2]uint64{{Dev: 2}: {0: {0xfebc0000, 0x20000}, 3: {0xfebe0000, 0x4000}}})
	s := NewSysfs(root)
	defer s.Close()

	as, err := s.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	if want := []Addr{{}, {Dev: 2}, {Seg: 1, Bus: 0x20, Dev: 0x1f}}; !slices.Equal(as, want) {
		t.Errorf("Addrs = %v, want %v", as, want)
	}
	segs, err := s.Segments()
	if err != nil || !slices.Equal(segs, []uint16{0, 1}) {
		t.Errorf("Segments = %v, %v", segs, err)
	}

	fns, err := Enumerate(s, Options{NoSizing: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := addrs(fns); !slices.Equal(got, []Addr{{}, {Dev: 2}}) {
		t.Fatalf("segment 0: %v", got)
	}
	if n := fns[1]; n.Device != 0x10d3 || len(n.Caps) != 6 || n.BARs[0].Addr != 0xfebc0000 {
		t.Errorf("nic through sysfs %+v", n)
	}
	// Sizes come from the resource file, not from writing the BARs.
	if n := fns[1]; n.BARs[0].Size != 0x20000 || n.BARs[3].Size != 0x4000 || nic.writes != 0 {
		t.Errorf("nic BARs through sysfs %v", n.BARs)
	}
	fns, err = Enumerate(s, Options{Segment: 1, AllBuses: true, NoSizing: true})
	if err != nil || len(fns) != 1 || fns[0].Device != 0x15f3 {
		t.Errorf("segment 1: %v, %v", fns, err)
	}

	// Absent functions read all ones; a short file ends config space.
	if v, err := s.ReadConfig(Addr{Bus: 9}, 0, 2); err != nil || v != 0xffff {
		t.Errorf("absent: %#x, %v", v, err)
	}
	if _, err := s.ReadConfig(Addr{}, 0x100, 4); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("past a 256-byte file: %v", err)
	}
	if err := s.WriteConfig(Addr{Bus: 9}, 4, 2, 0); !errors.Is(err, ErrAbsent) {
		t.Errorf("write to absent: %v", err)
	}
	if err := s.WriteConfig(Addr{}, 0x200, 4, 0); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("write past a 256-byte file: %v", err)
	}

	// Writes reach the file at the right offset and width.
	if err := EnableBusMaster(s, Addr{Dev: 2}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "0000:00:02.0", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if b[RegCommand] != CmdBusMaster || b[RegCommand+1] != 0 || b[RegStatus] != nic.cfg[RegStatus] {
		t.Errorf("command bytes % x after EnableBusMaster", b[RegCommand:RegStatus+2])
	}
}

func TestSysfsReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root opens read-only files for writing anyway")
	}
	root := sysfsTree(t, map[Addr]*fakeFn{{}: nicFn()}, nil, nil)
	if err := os.Chmod(filepath.Join(root, "0000:00:00.0", "config"), 0o444); err != nil {
		t.Fatal(err)
	}
	s := NewSysfs(root)
	defer s.Close()
	if v, err := s.ReadConfig(Addr{}, 0, 4); err != nil || v != 0x10d38086 {
		t.Fatalf("read-only file: %#x, %v", v, err)
	}
	if err := s.WriteConfig(Addr{}, RegCommand, 2, CmdMemory); err == nil {
		t.Error("write to a read-only config file succeeded")
	}
}

func TestSysfsBadRoot(t *testing.T) {
	s := NewSysfs(filepath.Join(t.TempDir(), "missing"))
	if _, err := s.Addrs(); err == nil {
		t.Error("missing root listed")
	}
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "not-a-function"), 0o755)
	if _, err := NewSysfs(root).Addrs(); err == nil {
		t.Error("junk directory name accepted")
	}
}

func TestParseAddr(t *testing.T) {
	good := []struct {
		s    string
		want Addr
	}{
		{"0000:00:02.0", Addr{Dev: 2}},
		{"00:1f.7", Addr{Dev: 31, Fn: 7}},
		{"ffff:ff:1f.7", Addr{Seg: 0xffff, Bus: 0xff, Dev: 31, Fn: 7}},
		{"0001:3a:00.1", Addr{Seg: 1, Bus: 0x3a, Fn: 1}},
	}
	for _, tt := range good {
		got, err := ParseAddr(tt.s)
		if err != nil || got != tt.want {
			t.Errorf("ParseAddr(%q) = %v, %v; want %v", tt.s, got, err, tt.want)
		}
		if tt.want.Seg == 0 && got.String() != tt.s[len(tt.s)-7:] {
			t.Errorf("%v.String() = %q", got, got.String())
		}
		if back, _ := ParseAddr(SysfsName(got)); back != got {
			t.Errorf("SysfsName round trip of %v gave %v", got, back)
		}
	}
	for _, s := range []string{"", "00:02", "0:0:0:0.0", "00:20.0", "00:02.8", "100:02.0", "10000:00:00.0", "00:02.00", "xx:02.0", "00:-1.0"} {
		if a, err := ParseAddr(s); err == nil {
			t.Errorf("ParseAddr(%q) = %v, want error", s, a)
		}
	}
}

// The two views of a function must agree: a size for a BAR the register
// says is absent, and a malformed resource file, are errors.
func TestSysfsBARSizesBad(t *testing.T) {
	fn := newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal)
	root := sysfsTree(t, map[Addr]*fakeFn{{}: fn}, nil, map[Addr][6][2]uint64{{}: {2: {0xfe000000, 0x1000}}})
	if _, err := Probe(NewSysfs(root), Addr{}, Options{NoSizing: true}); err == nil || !strings.Contains(err.Error(), "bar2") {
		t.Errorf("size for an absent BAR: %v", err)
	}
	for _, content := range []string{"", "0x0 0x0\n", "zz 0x0 0x0\n0 0 0\n0 0 0\n0 0 0\n0 0 0\n0 0 0\n"} {
		os.WriteFile(filepath.Join(root, "0000:00:00.0", "resource"), []byte(content), 0o644)
		if _, err := NewSysfs(root).BARSizes(Addr{}); err == nil {
			t.Errorf("resource file %q accepted", content)
		}
	}
}
