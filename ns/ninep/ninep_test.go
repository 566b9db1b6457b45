package ninep

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hugelgupf/p9/linux"

	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/admin"
)

// modeCtl stands for the iommu ctl: "strict" or "deferred N".
type modeCtl struct{ mode atomic.Value }

func (m *modeCtl) Read() (string, error) { return m.mode.Load().(string) + "\n", nil }

func (m *modeCtl) Write(cmd string) error {
	f := strings.Fields(cmd)
	switch {
	case len(f) == 1 && f[0] == "strict":
	case len(f) == 2 && f[0] == "deferred":
		if n, err := strconv.Atoi(f[1]); err != nil || n <= 0 {
			return fmt.Errorf("batch %q: want a positive number", f[1])
		}
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	m.mode.Store(cmd)
	return nil
}

const token = "0123456789abcdef0123"

func serve(t *testing.T, writable bool) (*Client, *modeCtl, *atomic.Uint64) {
	t.Helper()
	tok := ""
	if writable {
		tok = token
	}
	c, ctl, maps, _, err := serveToken(t, writable, tok)
	if err != nil {
		t.Fatal(err)
	}
	return c, ctl, maps
}

// serveToken serves a namespace guarded by token and attaches with tok.
func serveToken(t *testing.T, writable bool, tok string) (*Client, *modeCtl, *atomic.Uint64, *admin.Guard, error) {
	t.Helper()
	n := ns.New()
	ctl := &modeCtl{}
	ctl.mode.Store("strict")
	var maps atomic.Uint64
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(n.Add("/dev/iommu/ctl", ctl))
	must(n.Add("/dev/iommu/stats", ns.Text(func() string { return fmt.Sprintf("maps %d\n", maps.Add(1)) })))
	must(n.Add("/net/ether0/addr", ns.Text(func() string { return "52:54:00:12:34:56\n" })))
	secret, err := admin.ParseToken(token)
	must(err)
	g := admin.NewGuard(secret, t.Logf)
	srv := New(n, writable, g)
	cs, cc := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.ServeConn(cs) }()
	c, err := DialToken(cc, tok)
	if err != nil {
		cc.Close()
		<-done
		return nil, ctl, &maps, g, err
	}
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return c, ctl, &maps, g, nil
}

// TestWriteNeedsToken: on a writable server, a client without the token
// reads but cannot write, and one with a wrong token cannot attach; each
// refusal is counted and changes nothing.
func TestWriteNeedsToken(t *testing.T) {
	c, ctl, _, g, err := serveToken(t, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Read("/dev/iommu/ctl"); err != nil || got != "strict\n" {
		t.Fatalf("read without the token: %q, %v", got, err)
	}
	if err := c.Write("/dev/iommu/ctl", "deferred 32"); !errors.Is(err, linux.EROFS) {
		t.Errorf("write without the token: %v, want EROFS", err)
	}
	if ctl.mode.Load() != "strict" || g.Refused(admin.NoToken) != 1 {
		t.Errorf("mode %q, refusals:\n%s", ctl.mode.Load(), g.Stats())
	}
	// A file that takes no commands is no refusal of control.
	c.Write("/net/ether0/addr", "x")
	if g.Refused(admin.NoToken) != 1 {
		t.Errorf("a write to a read-only file counted as a refusal:\n%s", g.Stats())
	}
	for _, bad := range []string{"wrong-token-wrong-token", token + "0", token[:len(token)-1]} {
		if _, _, _, g, err := serveToken(t, true, bad); !errors.Is(err, linux.EACCES) || g.Refused(admin.BadToken) != 1 {
			t.Errorf("attach with %q: %v, want EACCES; refusals:\n%s", bad, err, g.Stats())
		}
	}
	// The token opens a read-only server's streams, not its ctl files.
	ro, ctl, _, g, err := serveToken(t, false, token)
	if err != nil {
		t.Fatalf("attach with the token to a read-only server: %v", err)
	}
	if err := ro.Write("/dev/iommu/ctl", "deferred 32"); !errors.Is(err, linux.EROFS) {
		t.Errorf("write with the token on a read-only server: %v, want EROFS", err)
	}
	if ctl.mode.Load() != "strict" || g.Refused(admin.ReadOnly) != 1 {
		t.Errorf("mode %q, refusals:\n%s", ctl.mode.Load(), g.Stats())
	}
}

func TestReadOnly(t *testing.T) {
	c, ctl, _ := serve(t, false)
	root, err := c.List("/")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(root) != "[{dev true} {net true}]" {
		t.Errorf("ls / = %v", root)
	}
	ents, err := c.List("/dev/iommu")
	if err != nil || fmt.Sprint(ents) != "[{ctl false} {stats false}]" {
		t.Errorf("ls /dev/iommu = %v, %v", ents, err)
	}
	s1, err := c.Read("/dev/iommu/stats")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := c.Read("/dev/iommu/stats")
	if s1 != "maps 1\n" || s2 != "maps 2\n" {
		t.Errorf("stats read %q then %q: each open renders anew", s1, s2)
	}
	err = c.Write("/dev/iommu/ctl", "deferred 32")
	if !errors.Is(err, linux.EROFS) {
		t.Errorf("write on a read-only server: %v, want EROFS", err)
	}
	if got, _ := c.Read("/dev/iommu/ctl"); got != "strict\n" {
		t.Errorf("ctl after refused write = %q", got)
	}
	if ctl.mode.Load() != "strict" {
		t.Errorf("refused write changed the mode")
	}
	if _, err := c.Read("/dev/nothing"); !errors.Is(err, linux.ENOENT) {
		t.Errorf("read of a missing file: %v", err)
	}
}

func TestReadWrite(t *testing.T) {
	c, ctl, _ := serve(t, true)
	if err := c.Write("/dev/iommu/ctl", "deferred 32\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Read("/dev/iommu/ctl"); got != "deferred 32\n" {
		t.Errorf("ctl = %q after deferred", got)
	}
	if err := c.Write("/dev/iommu/ctl", "deferred -1"); !errors.Is(err, linux.EINVAL) {
		t.Errorf("bad command: %v, want EINVAL", err)
	}
	if ctl.mode.Load() != "deferred 32" {
		t.Errorf("bad command changed the mode to %q", ctl.mode.Load())
	}
	if err := c.Write("/net/ether0/addr", "x"); !errors.Is(err, linux.EROFS) {
		t.Errorf("write to a file without commands: %v", err)
	}
	if got, _ := c.Read("/net/ether0/addr"); got != "52:54:00:12:34:56\n" {
		t.Errorf("addr = %q", got)
	}
}
