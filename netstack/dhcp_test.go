package netstack_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/netstack/dhcp"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// dhcpServer answers DISCOVER and REQUEST on a gVisor stack, written from
// RFC 2131's message layout independently of the client's codec.
type dhcpServer struct {
	conn *gonet.UDPConn
	mode string // "ok", "nak", "malformed", "silent"
	got  chan byte
	// lease and renew (T1) in seconds; renewals (REQUEST with ciaddr)
	// get a NAK when nakRenew is set.
	lease, renew uint32
	nakRenew     bool
	renewals     atomic.Int32
}

var (
	serverIP = netip.MustParseAddr("192.0.2.1")
	leaseIP  = netip.MustParseAddr("192.0.2.50")
	dns1     = netip.MustParseAddr("192.0.2.53")
)

func startDHCPServer(t *testing.T, s *netstack.Stack, mode string) *dhcpServer {
	t.Helper()
	var wq waiter.Queue
	ep, terr := s.NewEndpoint(udp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if terr != nil {
		t.Fatal(terr)
	}
	ep.SocketOptions().SetBroadcast(true)
	if terr := ep.Bind(tcpip.FullAddress{NIC: netstack.NICID(0), Port: dhcp.ServerPort}); terr != nil {
		t.Fatal(terr)
	}
	srv := &dhcpServer{conn: gonet.NewUDPConn(&wq, ep), mode: mode, got: make(chan byte, 64), lease: 3600}
	t.Cleanup(func() { srv.conn.Close() })
	return srv
}

func (s *dhcpServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, _, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		req := buf[:n]
		if n < 240 || req[0] != 1 {
			continue
		}
		var typ byte
		for i := 240; i < n && req[i] != 255; {
			if req[i] == 0 { // pad
				i++
				continue
			}
			if i+1 >= n || i+2+int(req[i+1]) > n {
				break
			}
			if req[i] == 53 && req[i+1] == 1 {
				typ = req[i+2]
			}
			i += 2 + int(req[i+1])
		}
		select {
		case s.got <- typ:
		default:
		}
		renewing := !bytes.Equal(req[12:16], []byte{0, 0, 0, 0}) // ciaddr
		var reply byte
		switch {
		case s.mode == "silent":
			continue
		case typ == 1:
			reply = 2 // OFFER
		case typ == 3 && renewing:
			s.renewals.Add(1)
			reply = 5
			if s.nakRenew {
				reply = 6
			}
		case typ == 3 && s.mode == "nak":
			reply = 6
		case typ == 3:
			reply = 5 // ACK
		default:
			continue
		}
		// RFC 2131 4.1: unicast to ciaddr when the client has one.
		to := &net.UDPAddr{IP: net.IPv4bcast, Port: dhcp.ClientPort}
		if renewing {
			to.IP = net.IP(bytes.Clone(req[12:16]))
		}
		s.conn.WriteTo(s.reply(req, reply), to)
	}
}

func (s *dhcpServer) reply(req []byte, typ byte) []byte {
	b := make([]byte, 240, 400)
	b[0], b[1], b[2] = 2, 1, 6
	copy(b[4:8], req[4:8])     // xid
	copy(b[10:12], req[10:12]) // flags
	if typ != 6 {
		copy(b[16:20], leaseIP.AsSlice())
	}
	copy(b[20:24], serverIP.AsSlice())
	copy(b[28:44], req[28:44]) // chaddr
	copy(b[236:240], []byte{99, 130, 83, 99})
	opt := func(code byte, v ...byte) { b = append(append(b, code, byte(len(v))), v...) }
	sid := serverIP.As4()
	opt(53, typ)
	opt(54, sid[:]...)
	if s.mode == "malformed" {
		// A lease time of 3 bytes, then an option running past the end.
		opt(51, 0, 0, 1)
		b = append(b, 3, 200, 192)
		return b
	}
	if typ != 6 {
		var lease [4]byte
		binary.BigEndian.PutUint32(lease[:], s.lease)
		opt(51, lease[:]...)
		if s.renew != 0 {
			binary.BigEndian.PutUint32(lease[:], s.renew)
			opt(58, lease[:]...)
		}
		opt(1, 255, 255, 255, 0)
		opt(3, sid[:]...)
		d := dns1.As4()
		opt(6, append(d[:], 192, 0, 2, 54)...)
	}
	b = append(b, 255)
	return b
}

// dhcpPair is a server stack with a static address and a bare client NIC
// wired to it.
func dhcpPair(t *testing.T, mode string) (client *fakeNIC, server *netstack.Stack, srv *dhcpServer) {
	t.Helper()
	a, b := newFakeNIC("ether0", 1), newFakeNIC("ether0", 2)
	crossWire(a, b)
	server, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: b, Addrs: []netip.Prefix{netip.PrefixFrom(serverIP, 24)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	srv = startDHCPServer(t, server, mode)
	return a, server, srv
}

var quickDHCP = dhcp.Config{Timeout: 2 * time.Second, Retransmit: 100 * time.Millisecond}

func TestDHCPLease(t *testing.T) {
	a, server, srv := dhcpPair(t, "ok")
	go srv.serve()
	var logs []string
	cs, err := netstack.NewStack(netstack.StackOptions{DHCP: quickDHCP, Logf: func(f string, args ...any) {
		logs = append(logs, strings.TrimSpace(f))
	}}, netstack.Interface{NIC: a, DHCP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	l := cs.Lease(0)
	if l == nil {
		t.Fatal("no lease recorded")
	}
	if l.Addr != netip.PrefixFrom(leaseIP, 24) || l.Router != serverIP || l.Server != serverIP || l.Duration != time.Hour || l.Renew != 30*time.Minute {
		t.Errorf("lease %v", l)
	}
	if len(l.DNS) != 2 || l.DNS[0] != dns1 || len(cs.DNS()) != 2 {
		t.Errorf("DNS %v (stack %v)", l.DNS, cs.DNS())
	}
	// The address, the subnet route and the default route are in place:
	// the server answers, and an off-link address routes via the router.
	if err := ping(t, cs, serverIP); err != nil {
		t.Fatalf("ping the server from the leased address: %v", err)
	}
	udpEcho(t, cs, server, leaseIP, serverIP, 100)
	r, terr := cs.FindRoute(0, tcpip.Address{}, tcpip.AddrFromSlice([]byte{198, 51, 100, 7}), ipv4.ProtocolNumber, false)
	if terr != nil {
		t.Fatalf("no default route: %s", terr)
	}
	if gw := r.NextHop(); gw != tcpip.AddrFromSlice(serverIP.AsSlice()) {
		t.Errorf("off-link next hop %v, want the router %v", gw, serverIP)
	}
	r.Release()
	if len(logs) == 0 {
		t.Errorf("nothing logged")
	}
}

func TestDHCPErrors(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"silent", []string{"no reply to DISCOVER", "deadline"}},
		{"malformed", []string{"no usable reply to DISCOVER", "malformed DHCP message"}},
		{"nak", []string{"refused", "NAK"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			a, _, srv := dhcpPair(t, tc.mode)
			go srv.serve()
			cs, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: a})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			c, err := dhcp.NewClient(cs.Stack, netstack.NICID(0), quickDHCP)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			l, err := c.Acquire(context.Background())
			if err == nil {
				t.Fatalf("lease %v from a %s server", l, tc.mode)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("took %v with a 2 s timeout", el)
			}
			if len(srv.got) == 0 {
				t.Errorf("server saw no request")
			}
			// The temporary 0.0.0.0 is gone again.
			if addrs := cs.NICInfo()[netstack.NICID(0)].ProtocolAddresses; len(addrs) != 0 {
				for _, a := range addrs {
					if a.Protocol == ipv4.ProtocolNumber {
						t.Errorf("address %v left on the NIC", a.AddressWithPrefix)
					}
				}
			}
		})
	}
}

// A failed DHCP falls back to the static address.
func TestDHCPFallback(t *testing.T) {
	a, server, srv := dhcpPair(t, "silent")
	go srv.serve()
	static := netip.MustParsePrefix("192.0.2.77/24")
	cs, err := netstack.NewStack(netstack.StackOptions{DHCP: dhcp.Config{Timeout: 300 * time.Millisecond, Retransmit: 100 * time.Millisecond}},
		netstack.Interface{NIC: a, DHCP: true, Addrs: []netip.Prefix{static}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.Lease(0) != nil {
		t.Errorf("lease recorded from a silent server")
	}
	if err := ping(t, server, static.Addr()); err != nil {
		t.Errorf("static fallback address unreachable: %v", err)
	}
}

// The lease is renewed at T1 by unicast; a NAK on renewal takes the
// address away.
func TestDHCPRenew(t *testing.T) {
	for _, nak := range []bool{false, true} {
		t.Run(fmt.Sprintf("nak=%v", nak), func(t *testing.T) {
			a, _, srv := dhcpPair(t, "ok")
			srv.lease, srv.renew, srv.nakRenew = 60, 1, nak
			go srv.serve()
			cs, err := netstack.NewStack(netstack.StackOptions{DHCP: quickDHCP}, netstack.Interface{NIC: a, DHCP: true})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if l := cs.Lease(0); l == nil || l.Renew != time.Second {
				t.Fatalf("lease %v", l)
			}
			eventually(t, "a renewal", func() bool { return srv.renewals.Load() > 0 })
			if !nak {
				eventually(t, "a second renewal", func() bool { return srv.renewals.Load() > 1 })
				if err := ping(t, cs, serverIP); err != nil {
					t.Errorf("renewed address unusable: %v", err)
				}
				return
			}
			eventually(t, "the address to go", func() bool {
				for _, pa := range cs.NICInfo()[netstack.NICID(0)].ProtocolAddresses {
					if pa.AddressWithPrefix.Address == tcpip.AddrFromSlice(leaseIP.AsSlice()) {
						return false
					}
				}
				return cs.Lease(0) == nil
			})
		})
	}
}
