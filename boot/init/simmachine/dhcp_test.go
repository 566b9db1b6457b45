package simmachine

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/netstack/dhcp"
	"github.com/ether9/ether9/netstack/dhcp/dhcptest"
	"github.com/ether9/ether9/netstack/ntp/ntptest"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// A machine whose DHCP server is silent for a while, then NAKs, then
// offers multicast and broadcast addresses, then offers well: it stays
// up throughout (the namespace answers at every step), never holds a bad
// address, and ends with the good lease. The client's waits are short so
// that the test takes seconds, not minutes.
func TestSimulatedMachineOutlastsItsDHCPServer(t *testing.T) {
	con := &console{}
	opt := system.DefaultOptions()
	opt.DHCPTiming = dhcp.Config{Retransmit: 50 * time.Millisecond, Sends: 2, Backoff: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond}
	opt.NineP = "off"
	h, err := Start(context.Background(), Config{Options: &opt, Logf: con.logf})
	if err != nil {
		t.Fatalf("start: %v\nconsole:\n%s", err, con.text())
	}
	defer h.Close()
	srv, err := dhcptest.Start(h.Peer.Stack, 1, PeerAddr.Addr(), GuestAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.NTP = []netip.Addr{PeerAddr.Addr()}
	clock, err := ntptest.Start(h.Peer.Stack, 1, 90*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer clock.Close()

	const silent, naks = 6, 2
	bad := []netip.Prefix{
		netip.MustParsePrefix("224.0.0.1/24"),
		netip.MustParsePrefix("239.1.2.3/8"),
		netip.MustParsePrefix("255.255.255.255/24"),
		netip.MustParsePrefix("10.0.2.255/24"),
	}
	var mu sync.Mutex
	var held []netip.Addr
	var nsErr error
	srv.SetPolicy(func(req *dhcpv4.DHCPv4, c dhcptest.Counts) dhcptest.Reply {
		// At every step the machine serves its namespace, and holds no
		// address but the lease's.
		text, err := h.System.Namespace().ReadFile("/net/ipifc/0/dhcp")
		mu.Lock()
		if err != nil || !strings.HasPrefix(text, "state ") {
			nsErr = err
		}
		if a, err := h.System.Stack().GetMainNICAddress(netstack.NICID(0), ipv4.ProtocolNumber); err == nil && a.Address.Len() > 0 {
			x, _ := netip.AddrFromSlice(a.Address.AsSlice())
			held = append(held, x)
		}
		mu.Unlock()
		disc := req.MessageType() == dhcpv4.MessageTypeDiscover
		switch n := c.Discovers; {
		case n <= silent:
			return dhcptest.Reply{}
		case n <= silent+naks && disc:
			return dhcptest.Reply{Type: dhcpv4.MessageTypeOffer}
		case n <= silent+naks:
			return dhcptest.Reply{Type: dhcpv4.MessageTypeNak}
		case n <= silent+naks+len(bad) && disc:
			return dhcptest.Reply{Type: dhcpv4.MessageTypeOffer, Addr: bad[n-silent-naks-1]}
		case n <= silent+naks+len(bad):
			// A hostile server stands by its offer.
			return dhcptest.Reply{Type: dhcpv4.MessageTypeAck, Addr: bad[n-silent-naks-1]}
		}
		return dhcptest.Answer(req, c)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := h.System.Stack().WaitLease(ctx, 0)
	if err != nil {
		text, _ := h.System.Namespace().ReadFile("/net/ipifc/0/dhcp")
		t.Fatalf("%v; server saw %+v\n%s\nconsole:\n%s", err, srv.Counts(), text, con.text())
	}
	if l.Addr != GuestAddr || l.Router != PeerAddr.Addr() {
		t.Errorf("lease %v", l)
	}
	con.waitFor(t, "ether0: dhcp 10.0.2.15/24 gw 10.0.2.2")
	con.waitFor(t, "ping: first reply from 10.0.2.2")
	// The lease names the peer as NTP server: the machine asks it, and
	// keeps its answer as an offset (the simulated platform's clock is
	// the host's, not ours to set).
	con.waitFor(t, "ntp: time ")
	if d := h.System.Now().Sub(time.Now()) - 90*time.Minute; d.Abs() > 5*time.Second {
		t.Errorf("System.Now is %v off the server's time", d)
	}
	if tt, err := h.System.Namespace().ReadFile("/dev/time"); err != nil || !strings.Contains(tt, "source ntp 10.0.2.2:123") {
		t.Errorf("/dev/time: %q, %v", tt, err)
	}
	text, err := h.System.Namespace().ReadFile("/net/ipifc/0/dhcp")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"state bound", "addr 10.0.2.15/24", "naks ", "last_refused"} {
		if !strings.Contains(text, w) {
			t.Errorf("/net/ipifc/0/dhcp lacks %q:\n%s", w, text)
		}
	}
	// A late reply shifts the server's phases (they count DISCOVERs),
	// so the NAKs are at least one, not exactly the plan's.
	if st := h.System.Stack().DHCP(0).Stats(); st.OffersRefused < uint64(len(bad)) || st.Naks == 0 || st.Naks > naks {
		t.Errorf("stats %+v: want >= %d offers refused, 1..%d NAKs", st, len(bad), naks)
	}
	mu.Lock()
	defer mu.Unlock()
	if nsErr != nil {
		t.Errorf("the namespace failed while there was no lease: %v", nsErr)
	}
	for _, a := range held {
		if a != GuestAddr.Addr() && !a.IsUnspecified() { // 0.0.0.0: sending DISCOVER
			t.Errorf("the machine held %v", a)
		}
	}
	if strings.Contains(con.text(), "powering off") {
		t.Errorf("console:\n%s", con.text())
	}
}
