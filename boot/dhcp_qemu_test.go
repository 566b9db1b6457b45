package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/qemu"
	"github.com/ether9/ether9/netstack/dhcp/dhcptest"
)

// TestDHCPServerStoryQEMU boots the image with its NIC on a stream
// netdev whose far end is a gVisor stack running the tests' DHCP
// server: silent for two DISCOVERs, a NAK, then offers of multicast,
// broadcast and the subnet's broadcast address, then a good offer. The
// machine stays up (its console shell answers while it has no lease),
// takes none of the bad addresses, and ends leased, serving HTTP to the
// far end. The client's own timings are used: about 15 s of it.
func TestDHCPServerStoryQEMU(t *testing.T) {
	needMachine(t, "e1000e")
	if !isMain(t, "./boot/init") {
		t.Skip("skipping: ./boot/init is not a command yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var log syncBuffer
	o := testOptions("e1000e", "./boot/init")
	p, err := assemble(ctx, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.remove)
	c, err := qemuConfig(o, p)
	if err != nil {
		t.Fatal(err)
	}
	c.Forward, c.Stream = nil, filepath.Join(t.TempDir(), "nic.sock")
	end, err := qemu.ListenStream(c.Stream)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := simmachine.NewPeer(end, [6]byte{0x52, 0x55, 0x0a, 0, 2, 2}, []netip.Prefix{simmachine.PeerAddr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := dhcptest.Start(peer.Stack, 1, simmachine.PeerAddr.Addr(), simmachine.GuestAddr)
	if err != nil {
		t.Fatal(err)
	}
	bad := []netip.Prefix{
		netip.MustParsePrefix("224.0.0.1/24"),
		netip.MustParsePrefix("255.255.255.255/24"),
		netip.MustParsePrefix("10.0.2.255/24"),
	}
	const silent = 2
	hostile := make(chan struct{})
	srv.SetPolicy(func(req *dhcpv4.DHCPv4, n dhcptest.Counts) dhcptest.Reply {
		disc := req.MessageType() == dhcpv4.MessageTypeDiscover
		switch {
		case n.Discovers <= silent:
			return dhcptest.Reply{}
		case n.Discovers == silent+1 && disc:
			return dhcptest.Reply{Type: dhcpv4.MessageTypeOffer}
		case n.Discovers == silent+1:
			return dhcptest.Reply{Type: dhcpv4.MessageTypeNak}
		case n.Discovers <= silent+1+len(bad) && disc:
			if n.Discovers == silent+2 {
				close(hostile)
			}
			return dhcptest.Reply{Type: dhcpv4.MessageTypeOffer, Addr: bad[n.Discovers-silent-2]}
		}
		return dhcptest.Answer(req, n)
	})
	vm, err := qemu.Start(c, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		vm.Stop()
		srv.Close()
		peer.Close()
		if err := end.Close(); err != nil {
			t.Errorf("stream: %v", err)
		}
	}()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s; server saw %+v\nconsole:\n%s", fmt.Sprintf(format, args...), srv.Counts(), vm.Console.Tail(60))
	}
	if _, err := vm.Console.WaitFor(ctx, "shell: on the console"); err != nil {
		fail("%v", err)
	}
	select {
	case <-hostile:
	case <-ctx.Done():
		fail("no hostile offer was ever sent")
	}
	// No lease yet, and the console shell answers.
	from := len(vm.Console.Lines())
	if _, err := io.WriteString(vm.Input, "cat /net/ipifc/0/dhcp\r"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := vm.Console.Wait(ctx, from, func(s string) bool { return strings.Contains(s, "naks 1") }, qemu.Panicked); err != nil {
		fail("the shell did not show the DHCP state: %v", err)
	}
	if _, err := vm.Console.WaitFor(ctx, "ether0: dhcp 10.0.2.15/24 gw 10.0.2.2"); err != nil {
		fail("%v", err)
	}
	page := getFromPeer(t, ctx, peer, "/ns/net/ipifc/0/dhcp")
	for _, w := range []string{"state bound", "addr 10.0.2.15/24", "naks 1", "offers_refused 3"} {
		if !strings.Contains(page, w) {
			fail("/net/ipifc/0/dhcp lacks %q:\n%s", w, page)
		}
	}
	for _, l := range vm.Console.Lines() {
		for _, b := range []string{"powering off", "dhcp 224.", "dhcp 255.", "dhcp 10.0.2.255"} {
			if strings.Contains(l.Text, b) {
				fail("console line %q", l.Text)
			}
		}
	}
}

// getFromPeer fetches path from the machine's HTTP server through the
// far end's stack.
func getFromPeer(t *testing.T, ctx context.Context, peer *simmachine.Peer, path string) string {
	t.Helper()
	to := tcpip.FullAddress{Addr: tcpip.AddrFrom4(simmachine.GuestAddr.Addr().As4()), Port: 80}
	var last error
	for ctx.Err() == nil {
		conn, err := gonet.DialContextTCP(ctx, peer.Stack, to, ipv4.ProtocolNumber)
		if err != nil {
			last = err
			time.Sleep(200 * time.Millisecond)
			continue
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: ether9\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s %v", path, resp.Status, err)
		}
		return string(b)
	}
	t.Fatalf("dial the machine from the far end: %v", last)
	return ""
}
