// Package dhcptest is a DHCPv4 server for tests, on a gVisor stack: the
// library's server4 on a gVisor UDP socket, answering as a Policy says,
// so a test can make it silent, NAK, or offer what no host may take.
package dhcptest

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// Reply is what the server sends for one request. A zero Type sends
// nothing.
type Reply struct {
	Type dhcpv4.MessageType
	Addr netip.Prefix // yiaddr and its mask; zero: the server's Lease
	// Change, if set, edits the reply before it is sent.
	Change func(*dhcpv4.DHCPv4)
}

// Policy decides the reply to a client's message. The server counts what
// it got before asking.
type Policy func(req *dhcpv4.DHCPv4, c Counts) Reply

// Counts are the client messages the server has seen, by kind. A
// REQUEST with ciaddr extends a lease (renewing, or rebinding: only the
// destination address tells them apart, which the socket does not
// give); one with option 50 and no server identifier is a reboot.
type Counts struct {
	Discovers, Selects, Extends, Reboots int
}

// Server is a DHCP server on UDP port 67 of a gVisor stack.
type Server struct {
	ID     netip.Addr   // server identifier and router
	Lease  netip.Prefix // the address offered by default
	DNS    []netip.Addr
	NTP    []netip.Addr
	Domain string
	// Times of the lease in seconds: lease, T1, T2 (0: not sent).
	LeaseTime, Renew, Rebind uint32

	srv    *server4.Server
	policy atomic.Pointer[Policy]
	mu     sync.Mutex
	counts Counts
	done   chan struct{}
}

// Start serves on NIC id of s (which must hold id's address).
func Start(s *stack.Stack, nic tcpip.NICID, id netip.Addr, lease netip.Prefix) (*Server, error) {
	var wq waiter.Queue
	ep, terr := s.NewEndpoint(udp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if terr != nil {
		return nil, fmt.Errorf("dhcptest: udp endpoint: %s", terr)
	}
	ep.SocketOptions().SetBroadcast(true)
	if terr := ep.Bind(tcpip.FullAddress{NIC: nic, Port: 67}); terr != nil {
		ep.Close()
		return nil, fmt.Errorf("dhcptest: bind :67: %s", terr)
	}
	srv := &Server{ID: id, Lease: lease, LeaseTime: 3600, done: make(chan struct{})}
	srv.SetPolicy(Answer)
	var err error
	srv.srv, err = server4.NewServer("", nil, srv.handle, server4.WithConn(gonet.NewUDPConn(&wq, ep)))
	if err != nil {
		ep.Close()
		return nil, fmt.Errorf("dhcptest: %w", err)
	}
	go func() {
		defer close(srv.done)
		srv.srv.Serve()
	}()
	return srv, nil
}

// Close stops the server.
func (s *Server) Close() {
	s.srv.Close()
	<-s.done
}

// SetPolicy changes how the server answers from the next message on.
func (s *Server) SetPolicy(p Policy) { s.policy.Store(&p) }

// Counts returns what the server has seen.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Answer is the well-behaved server: OFFER to DISCOVER, ACK to REQUEST.
func Answer(req *dhcpv4.DHCPv4, _ Counts) Reply {
	switch req.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		return Reply{Type: dhcpv4.MessageTypeOffer}
	case dhcpv4.MessageTypeRequest:
		return Reply{Type: dhcpv4.MessageTypeAck}
	}
	return Reply{}
}

// Silent answers nothing.
func Silent(*dhcpv4.DHCPv4, Counts) Reply { return Reply{} }

func (s *Server) handle(conn net.PacketConn, peer net.Addr, req *dhcpv4.DHCPv4) {
	if req.OpCode != dhcpv4.OpcodeBootRequest {
		return
	}
	ciaddr := req.ClientIPAddr.To4()
	renewing := ciaddr != nil && !ciaddr.Equal(net.IPv4zero)
	s.mu.Lock()
	switch {
	case req.MessageType() == dhcpv4.MessageTypeDiscover:
		s.counts.Discovers++
	case req.MessageType() != dhcpv4.MessageTypeRequest:
	case renewing:
		s.counts.Extends++
	case req.ServerIdentifier() == nil:
		s.counts.Reboots++
	default:
		s.counts.Selects++
	}
	c := s.counts
	s.mu.Unlock()
	r := (*s.policy.Load())(req, c)
	if r.Type == dhcpv4.MessageTypeNone {
		return
	}
	resp, err := s.reply(req, r)
	if err != nil {
		return
	}
	// RFC 2131 section 4.1: to ciaddr when the client has one, else
	// broadcast (server4 makes a peer without an address broadcast).
	to := peer
	if renewing {
		to = &net.UDPAddr{IP: ciaddr, Port: 68}
	}
	conn.WriteTo(resp.ToBytes(), to)
}

func (s *Server) reply(req *dhcpv4.DHCPv4, r Reply) (*dhcpv4.DHCPv4, error) {
	addr := r.Addr
	if !addr.IsValid() {
		addr = s.Lease
	}
	mods := []dhcpv4.Modifier{
		dhcpv4.WithMessageType(r.Type),
		dhcpv4.WithServerIP(s.ID.AsSlice()),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(s.ID.AsSlice())),
	}
	if r.Type != dhcpv4.MessageTypeNak {
		mods = append(mods,
			dhcpv4.WithYourIP(addr.Addr().AsSlice()),
			dhcpv4.WithNetmask(net.CIDRMask(addr.Bits(), 32)),
			dhcpv4.WithLeaseTime(s.LeaseTime),
			dhcpv4.WithRouter(s.ID.AsSlice()))
		if s.Renew != 0 {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptRenewTimeValue(time.Duration(s.Renew)*time.Second)))
		}
		if s.Rebind != 0 {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptRebindingTimeValue(time.Duration(s.Rebind)*time.Second)))
		}
		if len(s.DNS) > 0 {
			mods = append(mods, dhcpv4.WithDNS(ips(s.DNS)...))
		}
		if len(s.NTP) > 0 {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptNTPServers(ips(s.NTP)...)))
		}
		if s.Domain != "" {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptDomainName(s.Domain)))
		}
	}
	resp, err := dhcpv4.NewReplyFromRequest(req, mods...)
	if err != nil {
		return nil, err
	}
	if r.Change != nil {
		r.Change(resp)
	}
	return resp, nil
}

func ips(as []netip.Addr) []net.IP {
	out := make([]net.IP, len(as))
	for i, a := range as {
		out[i] = a.AsSlice()
	}
	return out
}
