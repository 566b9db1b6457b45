package ns

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// counterCtl is a ctl file over a value: "set N" and "add N".
type counterCtl struct{ v atomic.Int64 }

func (c *counterCtl) Read() (string, error) { return fmt.Sprintf("value: %d\n", c.v.Load()), nil }

func (c *counterCtl) Write(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) != 2 || (f[0] != "set" && f[0] != "add") {
		return fmt.Errorf("usage: set N | add N")
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return fmt.Errorf("%q: not a number", f[1])
	}
	if f[0] == "set" {
		c.v.Store(n)
	} else {
		c.v.Add(n)
	}
	return nil
}

func TestRegistration(t *testing.T) {
	n := New()
	c := &counterCtl{}
	if err := n.Add("/net/ether0/ctl", c); err != nil {
		t.Fatal(err)
	}
	if err := n.Add("/net/ether0/addr", Text(func() string { return "52:54:00:12:34:56\n" })); err != nil {
		t.Fatal(err)
	}
	if err := n.Add("net/ether0/addr", Text(func() string { return "" })); !errors.Is(err, ErrExist) {
		t.Errorf("second add: %v, want ErrExist", err)
	}
	if err := n.Add("/net/ether0/addr/x", Text(func() string { return "" })); !errors.Is(err, ErrNotDir) {
		t.Errorf("add below a file: %v, want ErrNotDir", err)
	}
	if err := n.Add("/net", Text(func() string { return "" })); !errors.Is(err, ErrExist) {
		t.Errorf("add over a directory: %v, want ErrExist", err)
	}
	root, err := n.List("/")
	if err != nil || len(root) != 1 || root[0].Name != "net" || !root[0].Dir {
		t.Errorf("ls /: %v %v", root, err)
	}
	ents, err := n.List("/net/ether0")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{Name: "addr"}, {Name: "ctl", Writable: true}}
	if fmt.Sprint(ents) != fmt.Sprint(want) {
		t.Errorf("ls /net/ether0 = %v, want %v", ents, want)
	}
	if s, err := n.ReadFile("/net/ether0/../ether0/addr"); err != nil || s != "52:54:00:12:34:56\n" {
		t.Errorf("read addr = %q, %v", s, err)
	}
	if _, err := n.ReadFile("/net/ether1/addr"); !errors.Is(err, ErrNotExist) {
		t.Errorf("read missing: %v", err)
	}
	if _, err := n.ReadFile("/net"); !errors.Is(err, ErrIsDir) {
		t.Errorf("read dir: %v", err)
	}
	if _, err := n.List("/net/ether0/addr"); !errors.Is(err, ErrNotDir) {
		t.Errorf("ls file: %v", err)
	}
	if err := n.WriteFile("/net/ether0/addr", "x"); !errors.Is(err, ErrPermission) {
		t.Errorf("write read-only file: %v", err)
	}
	if err := n.Remove("/net/ether0"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Stat("/net/ether0/ctl"); !errors.Is(err, ErrNotExist) {
		t.Errorf("stat after remove: %v", err)
	}
}

func TestCtl(t *testing.T) {
	n := New()
	c := &counterCtl{}
	if err := n.Add("/dev/x/ctl", c); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd     string
		want    int64
		wantErr bool
	}{
		{"set 5", 5, false},
		{"add 3\n", 8, false},
		{"add 1\nadd 1\n\n", 10, false},
		{"set x", 10, true},
		{"frob 1", 10, true},
		{"set", 10, true},
		{"set 1 2", 10, true},
		{"", 10, false},
		{"set 7\nbad\nset 9", 7, true}, // lines before the bad one apply, after it none
	} {
		err := n.WriteFile("/dev/x/ctl", tc.cmd)
		if (err != nil) != tc.wantErr {
			t.Errorf("write %q: err %v, want error %v", tc.cmd, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "/dev/x/ctl") {
			t.Errorf("write %q: error %q does not name the file", tc.cmd, err)
		}
		if got := c.v.Load(); got != tc.want {
			t.Errorf("after %q: value %d, want %d", tc.cmd, got, tc.want)
		}
	}
	ro := n.ReadOnly()
	if err := ro.WriteFile("/dev/x/ctl", "set 1"); !errors.Is(err, ErrPermission) {
		t.Errorf("read-only view write: %v", err)
	}
	if c.v.Load() != 7 {
		t.Errorf("read-only write changed the value to %d", c.v.Load())
	}
	if s, err := ro.ReadFile("/dev/x/ctl"); err != nil || s != "value: 7\n" {
		t.Errorf("read-only view read = %q, %v", s, err)
	}
	if e, _ := ro.Stat("/dev/x/ctl"); e.Writable {
		t.Errorf("read-only view says the ctl is writable")
	}
}

// TestConcurrent reads files while their counters move and files come and
// go; run with -race.
func TestConcurrent(t *testing.T) {
	n := New()
	c := &counterCtl{}
	if err := n.Add("/dev/c/ctl", c); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	const rounds = 2000
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			if err := n.WriteFile("/dev/c/ctl", "add 1"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			p := fmt.Sprintf("/tmp/f%d", i%8)
			_ = n.Add(p, Text(func() string { return "x" }))
			_, _ = n.List("/tmp")
			_ = n.Remove(p)
		}
	}()
	go func() {
		defer wg.Done()
		last := int64(-1)
		for i := 0; i < rounds; i++ {
			s, err := n.ReadFile("/dev/c/ctl")
			if err != nil {
				t.Error(err)
				return
			}
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(s, "value:")), 10, 64)
			if err != nil || v < last {
				t.Errorf("read %q after %d", s, last)
				return
			}
			last = v
		}
	}()
	wg.Wait()
	if got := c.v.Load(); got != rounds {
		t.Errorf("counter %d, want %d", got, rounds)
	}
}
