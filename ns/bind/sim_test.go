package bind_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/ns"
	"github.com/ether9/ether9/ns/admin"
	"github.com/ether9/ether9/ns/ninep"
	"github.com/hugelgupf/p9/linux"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// counters parses a "name: value" file.
func counters(t *testing.T, n *ns.Namespace, p string) map[string]uint64 {
	t.Helper()
	s, err := n.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("%s: line %q is not name: value", p, l)
		}
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: line %q: %v", p, l, err)
		}
		out[k] = x
	}
	return out
}

// settled reads the stats once the receive path is quiet: the counters
// of one file are read one after another, so a frame in flight could be
// counted in one and not yet in the next.
func settled(t *testing.T, n *ns.Namespace) map[string]uint64 {
	t.Helper()
	prev := counters(t, n, "/net/ether0/stats")
	for i := 0; i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
		cur := counters(t, n, "/net/ether0/stats")
		if cur["rx_frames"] == prev["rx_frames"] && cur["rx_copybreak"]+cur["rx_handoff"] == prev["rx_copybreak"]+prev["rx_handoff"] {
			return cur
		}
		prev = cur
	}
	t.Fatal("receive counters never settled")
	return nil
}

// testToken is the machine's ether9.token.
const testToken = "test-token-0123456789"

func start(t *testing.T, nineP string) *simmachine.Host {
	t.Helper()
	opt := system.DefaultOptions()
	opt.IP, opt.Gateway, opt.DHCP = simmachine.GuestAddr, simmachine.PeerAddr.Addr(), false
	opt.NineP = nineP
	tok, err := admin.ParseToken(testToken)
	if err != nil {
		t.Fatal(err)
	}
	opt.Token = tok
	h, err := simmachine.Start(context.Background(), simmachine.Config{Listen: "127.0.0.1:0", Options: &opt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// fetch moves bytes from the machine to the host: full-size frames to the
// machine are few (ACKs are short), so the RX side sees mostly short
// frames, which copybreak decides about.
func fetch(t *testing.T, h *simmachine.Host, n int) {
	t.Helper()
	req, err := http.NewRequest("GET", fmt.Sprintf("http://%s/source?bytes=%d", h.Forward.Addr(), n), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, err := io.ReadAll(resp.Body); err != nil || len(b) != n {
		t.Fatalf("fetch: %d bytes, %v", len(b), err)
	}
}

// TestCopybreakThroughNamespace writes copybreak to ether0's ctl and
// checks the RX path follows: with 0 every frame is handed off, with 2048
// every frame is copied.
func TestCopybreakThroughNamespace(t *testing.T) {
	h := start(t, "")
	n := h.System.Namespace()
	for _, p := range []string{"/net/ether0/addr", "/net/ether0/link", "/net/ether0/ifstats", "/dev/iommu/stats",
		"/dev/iommu/domains", "/dev/pci/00:02.0", "/dev/kmesg", "/dev/sysstat", "/net/ipifc/0/addr", "/net/tcp/stats", "/net/udp/stats"} {
		s, err := n.ReadFile(p)
		if err != nil || s == "" {
			t.Errorf("read %s: %q, %v", p, s, err)
		}
	}
	// The static IPv4 address, then the IPv6 link-local one the MAC
	// makes (RFC 4862), a line each.
	if s, _ := n.ReadFile("/net/ipifc/0/addr"); s != "10.0.2.15\nfe80::5054:ff:fe12:3456\n" {
		t.Errorf("ipifc addr %q", s)
	}
	if s, _ := n.ReadFile("/net/ipifc/0/mask"); s != "255.255.255.0\n/64\n" {
		t.Errorf("ipifc mask %q", s)
	}
	if s, _ := n.ReadFile("/dev/pci/00:02.0"); !strings.Contains(s, "8086:10d3 e1000e") || !strings.Contains(s, "driver e1000e") {
		t.Errorf("pci file:\n%s", s)
	}
	if s, _ := n.ReadFile("/net/ether0/link"); !strings.Contains(s, "link: up\nspeed: 1000\n") || !strings.Contains(s, "tso: ") {
		t.Errorf("link file:\n%s", s)
	}

	if err := n.WriteFile("/net/ether0/ctl", "copybreak 0"); err != nil {
		t.Fatal(err)
	}
	before := settled(t, n)
	fetch(t, h, 256<<10)
	mid := settled(t, n)
	if d := mid["rx_copybreak"] - before["rx_copybreak"]; d != 0 {
		t.Errorf("copybreak 0: %d frames copied", d)
	}
	if d := mid["rx_handoff"] - before["rx_handoff"]; d == 0 {
		t.Errorf("copybreak 0: no frame handed off")
	}

	if err := n.WriteFile("/net/ether0/ctl", "copybreak 2048"); err != nil {
		t.Fatal(err)
	}
	fetch(t, h, 256<<10)
	after := settled(t, n)
	if after["copybreak"] != 2048 {
		t.Errorf("copybreak counter %d", after["copybreak"])
	}
	frames := after["rx_frames"] - mid["rx_frames"]
	copied := after["rx_copybreak"] - mid["rx_copybreak"]
	if frames == 0 || copied != frames {
		t.Errorf("copybreak 2048: %d of %d frames copied, want all", copied, frames)
	}
	if d := after["rx_handoff"] - mid["rx_handoff"]; d != 0 {
		t.Errorf("copybreak 2048: %d frames handed off", d)
	}
	if after["good_packets_rx"] == 0 || after["good_packets_rx"] < mid["good_packets_rx"] {
		t.Errorf("device counter good_packets_rx %d -> %d", mid["good_packets_rx"], after["good_packets_rx"])
	}

	// A bad command is refused and changes nothing.
	for _, bad := range []string{"copybreak 99999", "copybreak x", "frob 1", "tso sideways"} {
		if err := n.WriteFile("/net/ether0/ctl", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if c := counters(t, n, "/net/ether0/stats")["copybreak"]; c != 2048 {
		t.Errorf("copybreak %d after bad commands", c)
	}
}

// dial9P connects to the machine's 9P port from the peer's stack and
// attaches with tok ("": read-only).
func dial9P(t *testing.T, h *simmachine.Host, tok string) *ninep.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var c *gonet.TCPConn
	var err error
	for ctx.Err() == nil {
		c, err = gonet.DialContextTCP(ctx, h.Peer.Stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(simmachine.GuestAddr.Addr().As4()), Port: ninep.Port}, ipv4.ProtocolNumber)
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond) // the server may not listen yet
	}
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ninep.DialToken(c, tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func Test9POnSimulatedMachine(t *testing.T) {
	for _, rw := range []bool{false, true} {
		t.Run(fmt.Sprintf("rw=%v", rw), func(t *testing.T) {
			mode := "ro"
			if rw {
				mode = "rw"
			}
			h := start(t, mode)
			// Without the token, writes are refused and counted.
			anon := dial9P(t, h, "")
			if err := anon.Write("/dev/iommu/ctl", "deferred 32\n"); !errors.Is(err, linux.EROFS) {
				t.Errorf("write without the token: %v, want EROFS", err)
			}
			want := "no_token 1\n"
			if !rw {
				want = "read_only 1\n"
			}
			if r, _ := h.System.Namespace().ReadFile("/dev/admin/refused"); !strings.Contains(r, want) {
				t.Errorf("/dev/admin/refused:\n%s\nwant %q", r, want)
			}
			var c *ninep.Client
			if rw {
				c = dial9P(t, h, testToken)
			} else {
				c = anon
			}
			s, err := c.Read("/dev/iommu/stats")
			if err != nil || !strings.Contains(s, "mode strict\n") {
				t.Fatalf("iommu stats: %q, %v", s, err)
			}
			err = c.Write("/dev/iommu/ctl", "deferred 32\n")
			mode, _ = h.System.Namespace().ReadFile("/dev/iommu/ctl")
			if rw {
				if err != nil || mode != "deferred 32\n" {
					t.Errorf("rw: write %v, ctl now %q", err, mode)
				}
				if err := c.Write("/dev/iommu/ctl", "deferred 0"); !errors.Is(err, linux.EINVAL) {
					t.Errorf("bad command: %v", err)
				}
			} else if !errors.Is(err, linux.EROFS) || mode != "strict\n" {
				t.Errorf("ro: write %v, ctl now %q", err, mode)
			}
		})
	}
}
