// Package dhcp keeps a DHCPv4 lease for one NIC of a gVisor stack. The
// messages and their exchange are github.com/insomniacslk/dhcp's (nclient4
// over a gVisor UDP socket); this package adds what an appliance needs on
// top: offers of addresses no host may take are refused and counted, the
// lease is renewed (RFC 2131 RENEWING) and rebound (REBINDING) as it says,
// checked again (INIT-REBOOT) when the link comes back, and a machine
// without a lease keeps asking, with back-off, for as long as it runs.
package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// ErrRefused is wrapped by errors for a server's NAK.
var ErrRefused = errors.New("refused by the server (NAK)")

// Ports of RFC 2131.
const (
	ServerPort = nclient4.ServerPort
	ClientPort = nclient4.ClientPort
)

// Config tunes a Client. The zero value gives the defaults.
type Config struct {
	// Retransmit is the first wait for a reply; it doubles after every
	// unanswered send (RFC 2131 section 4.1). Default 1 s.
	Retransmit time.Duration
	// Sends is how often one message is sent before its exchange fails.
	// Default 4 (1+2+4+8 s with the default Retransmit).
	Sends int
	// Backoff is the pause after a failed acquisition before the next
	// DISCOVER; it doubles after each failure up to BackoffMax and is
	// never given up. Defaults 2 s and 64 s.
	Backoff, BackoffMax time.Duration
	// MinRetry is the least wait between two unanswered renewals or
	// rebinds (RFC 2131 section 4.4.5 says 60 s, the default), unless the
	// next deadline of the lease comes first.
	MinRetry time.Duration
	// Hostname, if set, is sent in option 12.
	Hostname string
}

func (c Config) withDefaults() Config {
	if c.Retransmit <= 0 {
		c.Retransmit = time.Second
	}
	if c.Sends <= 0 {
		c.Sends = 4
	}
	if c.Backoff <= 0 {
		c.Backoff = 2 * time.Second
	}
	if c.BackoffMax < c.Backoff {
		c.BackoffMax = max(64*time.Second, c.Backoff)
	}
	if c.MinRetry <= 0 {
		c.MinRetry = 60 * time.Second
	}
	return c
}

// Stats count the client's messages and what it refused.
type Stats struct {
	Discovers, OffersRefused, Requests, Acks, AcksRefused, Naks uint64
	Renewals, Rebinds, Reboots, Expired, Failures               uint64
}

type counters struct {
	discovers, offersRefused, requests, acks, acksRefused, naks atomic.Uint64
	renewals, rebinds, reboots, expired, failures               atomic.Uint64
}

// Client acquires and keeps a lease for one NIC of a gVisor stack.
type Client struct {
	nicID tcpip.NICID
	mac   net.HardwareAddr
	cfg   Config
	// open returns the client's socket; unbound, it also gives the NIC
	// the unspecified address to send from until done is called.
	open func(unbound bool) (conn net.PacketConn, done func(), err error)

	n    counters
	link chan struct{} // the link came up

	mu          sync.Mutex
	state       string
	lease       *Lease
	lastRefused string
}

// NewClient returns a client for NIC nicID of s.
func NewClient(s *stack.Stack, nicID tcpip.NICID, cfg Config) (*Client, error) {
	la := s.NICInfo()[nicID].LinkAddress
	if len(la) != 6 {
		return nil, fmt.Errorf("dhcp: nic %d: link address %q is not Ethernet", nicID, la)
	}
	c := newClient(nicID, net.HardwareAddr([]byte(la)), cfg)
	c.open = func(unbound bool) (net.PacketConn, func(), error) { return openUDP(s, nicID, unbound) }
	return c, nil
}

func newClient(nicID tcpip.NICID, mac net.HardwareAddr, cfg Config) *Client {
	return &Client{nicID: nicID, mac: mac, cfg: cfg.withDefaults(), link: make(chan struct{}, 1), state: "init"}
}

// openUDP opens UDP port 68 on NIC id, allowed to broadcast. Unbound, the
// NIC holds 0.0.0.0 so that it can send from it (RFC 2131 section 4.1)
// until done.
func openUDP(s *stack.Stack, id tcpip.NICID, unbound bool) (net.PacketConn, func(), error) {
	done := func() {}
	if unbound {
		any4 := tcpip.ProtocolAddress{
			Protocol:          ipv4.ProtocolNumber,
			AddressWithPrefix: tcpip.AddressWithPrefix{Address: header.IPv4Any},
		}
		if err := s.AddProtocolAddress(id, any4, stack.AddressProperties{}); err != nil {
			if _, dup := err.(*tcpip.ErrDuplicateAddress); !dup {
				return nil, nil, fmt.Errorf("dhcp: nic %d: add 0.0.0.0: %s", id, err)
			}
		}
		done = func() { s.RemoveAddress(id, header.IPv4Any) }
	}
	var wq waiter.Queue
	ep, terr := s.NewEndpoint(udp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if terr != nil {
		done()
		return nil, nil, fmt.Errorf("dhcp: nic %d: udp endpoint: %s", id, terr)
	}
	ep.SocketOptions().SetBroadcast(true)
	fail := func(what string, terr tcpip.Error) (net.PacketConn, func(), error) {
		ep.Close()
		done()
		return nil, nil, fmt.Errorf("dhcp: nic %d: %s: %s", id, what, terr)
	}
	if terr := ep.SocketOptions().SetBindToDevice(int32(id)); terr != nil {
		return fail("bind to device", terr)
	}
	if terr := ep.Bind(tcpip.FullAddress{NIC: id, Port: ClientPort}); terr != nil {
		return fail(fmt.Sprintf("bind :%d", ClientPort), terr)
	}
	return gonet.NewUDPConn(&wq, ep), done, nil
}

// Stats returns the counters.
func (c *Client) Stats() Stats {
	return Stats{
		Discovers: c.n.discovers.Load(), OffersRefused: c.n.offersRefused.Load(),
		Requests: c.n.requests.Load(), Acks: c.n.acks.Load(), AcksRefused: c.n.acksRefused.Load(),
		Naks: c.n.naks.Load(), Renewals: c.n.renewals.Load(), Rebinds: c.n.rebinds.Load(),
		Reboots: c.n.reboots.Load(), Expired: c.n.expired.Load(), Failures: c.n.failures.Load(),
	}
}

// Lease is the lease Run holds, nil without one.
func (c *Client) Lease() *Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lease
}

// LinkUp tells Run that the link came (back) up: a held lease is checked
// at once (INIT-REBOOT), a client without one stops waiting to DISCOVER.
func (c *Client) LinkUp() {
	select {
	case c.link <- struct{}{}:
	default:
	}
}

// refused counts an OFFER or ACK that was not taken, keeping the reason.
func (c *Client) refused(n *atomic.Uint64, err error) {
	n.Add(1)
	c.mu.Lock()
	c.lastRefused = err.Error()
	c.mu.Unlock()
}

func (c *Client) modifiers(extra ...dhcpv4.Modifier) []dhcpv4.Modifier {
	m := []dhcpv4.Modifier{
		dhcpv4.WithRequestedOptions(
			dhcpv4.OptionSubnetMask, dhcpv4.OptionRouter, dhcpv4.OptionDomainNameServer,
			dhcpv4.OptionDomainName, dhcpv4.OptionInterfaceMTU, dhcpv4.OptionNTPServers,
			dhcpv4.OptionClasslessStaticRoute, dhcpv4.OptionIPAddressLeaseTime,
			dhcpv4.OptionRenewTimeValue, dhcpv4.OptionRebindingTimeValue),
		dhcpv4.WithOption(dhcpv4.OptMaxMessageSize(nclient4.MaxMessageSize)),
		dhcpv4.WithOption(dhcpv4.OptClientIdentifier(append([]byte{1}, c.mac...))),
	}
	if c.cfg.Hostname != "" {
		m = append(m, dhcpv4.WithOption(dhcpv4.OptHostName(c.cfg.Hostname)))
	}
	return append(m, extra...)
}

// exchange opens the socket and runs f with a library client on it.
func (c *Client) exchange(unbound bool, f func(nc *nclient4.Client) (*Lease, error)) (*Lease, error) {
	conn, done, err := c.open(unbound)
	if err != nil {
		return nil, err
	}
	defer done()
	nc, err := nclient4.NewWithConn(conn, c.mac, nclient4.WithTimeout(c.cfg.Retransmit), nclient4.WithRetry(c.cfg.Sends))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("dhcp: nic %d: %w", c.nicID, err)
	}
	defer nc.Close()
	return f(nc)
}

// Acquire runs DISCOVER, OFFER, REQUEST, ACK once and returns the lease.
// Offers of addresses no host may take are skipped and counted, as are
// ACKs that do not make a lease; a NAK is an error wrapping ErrRefused.
// It does not configure the stack: the caller adds the address.
func (c *Client) Acquire(ctx context.Context) (*Lease, error) {
	return c.exchange(true, func(nc *nclient4.Client) (*Lease, error) {
		sent := time.Now()
		disc, err := dhcpv4.NewDiscovery(c.mac, c.modifiers(dhcpv4.WithBroadcast(true))...)
		if err != nil {
			return nil, fmt.Errorf("dhcp: nic %d: DISCOVER: %w", c.nicID, err)
		}
		c.n.discovers.Add(1)
		refusedBefore := c.n.offersRefused.Load()
		offer, err := nc.SendAndRead(ctx, nclient4.DefaultServers, disc, func(m *dhcpv4.DHCPv4) bool {
			if m.MessageType() != dhcpv4.MessageTypeOffer {
				return false
			}
			if err := checkOffer(m); err != nil {
				c.refused(&c.n.offersRefused, err)
				return false
			}
			return true
		})
		if err != nil {
			if n := c.n.offersRefused.Load() - refusedBefore; n > 0 {
				return nil, fmt.Errorf("dhcp: nic %d: no usable OFFER (%d refused, last: %s): %w", c.nicID, n, c.lastRefusal(), err)
			}
			return nil, fmt.Errorf("dhcp: nic %d: no reply to DISCOVER after %d sends: %w", c.nicID, c.cfg.Sends, err)
		}
		yiaddr, _ := addrOf(offer.YourIPAddr)
		server, _ := addrOf(offer.ServerIdentifier())
		req, err := dhcpv4.NewRequestFromOffer(offer, c.modifiers(dhcpv4.WithBroadcast(true))...)
		if err != nil {
			return nil, fmt.Errorf("dhcp: nic %d: REQUEST: %w", c.nicID, err)
		}
		return c.request(ctx, nc, req, nclient4.DefaultServers, yiaddr, server, sent, "request")
	})
}

// request sends req to dst until an ACK that makes a lease for addr
// comes, or a NAK (from server, when valid).
func (c *Client) request(ctx context.Context, nc *nclient4.Client, req *dhcpv4.DHCPv4, dst *net.UDPAddr, addr, server netip.Addr, sent time.Time, what string) (*Lease, error) {
	c.n.requests.Add(1)
	var lease *Lease
	reply, err := nc.SendAndRead(ctx, dst, req, func(m *dhcpv4.DHCPv4) bool {
		if id, ok := addrOf(m.ServerIdentifier()); server.IsValid() && (!ok || id != server) {
			return false // another server's answer to another client
		}
		switch m.MessageType() {
		case dhcpv4.MessageTypeNak:
			return true
		case dhcpv4.MessageTypeAck:
			l, err := leaseFrom(m, addr, server, sent)
			if err != nil {
				c.refused(&c.n.acksRefused, err)
				return false
			}
			lease = l
			return true
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("dhcp: nic %d: %s %v: no answer after %d sends: %w", c.nicID, what, addr, c.cfg.Sends, err)
	}
	if reply.MessageType() == dhcpv4.MessageTypeNak {
		c.n.naks.Add(1)
		from, _ := addrOf(reply.ServerIdentifier())
		msg := ""
		if m := reply.Message(); m != "" {
			msg = fmt.Sprintf(" (%q)", m)
		}
		return nil, fmt.Errorf("dhcp: nic %d: %s %v from %v%s: %w", c.nicID, what, addr, from, msg, ErrRefused)
	}
	c.n.acks.Add(1)
	return lease, nil
}

// Renew asks the server that granted l to extend it (RFC 2131 section
// 4.4.5, RENEWING): a REQUEST from the leased address, sent straight to
// the server. The NIC must hold l.Addr.
func (c *Client) Renew(ctx context.Context, l *Lease) (*Lease, error) {
	return c.extend(ctx, l, &net.UDPAddr{IP: l.Server.AsSlice(), Port: ServerPort}, l.Server, "renew")
}

// Rebind asks any server to extend l (REBINDING): the same REQUEST,
// broadcast, after the granting server has not answered until T2.
func (c *Client) Rebind(ctx context.Context, l *Lease) (*Lease, error) {
	return c.extend(ctx, l, nclient4.DefaultServers, netip.Addr{}, "rebind")
}

func (c *Client) extend(ctx context.Context, l *Lease, dst *net.UDPAddr, server netip.Addr, what string) (*Lease, error) {
	if l == nil || l.ack == nil {
		return nil, fmt.Errorf("dhcp: nic %d: %s needs a lease from an ACK", c.nicID, what)
	}
	return c.exchange(false, func(nc *nclient4.Client) (*Lease, error) {
		sent := time.Now()
		req, err := dhcpv4.NewRenewFromAck(l.ack, c.modifiers()...)
		if err != nil {
			return nil, fmt.Errorf("dhcp: nic %d: %s: %w", c.nicID, what, err)
		}
		req.ClientHWAddr = c.mac
		return c.request(ctx, nc, req, dst, l.Addr.Addr(), server, sent, what)
	})
}

// Reboot checks l with any server after the link came back (RFC 2131
// section 3.2, INIT-REBOOT): a broadcast REQUEST naming the address and
// no server. An ACK extends the lease; a NAK means the machine moved to
// another network.
func (c *Client) Reboot(ctx context.Context, l *Lease) (*Lease, error) {
	return c.exchange(false, func(nc *nclient4.Client) (*Lease, error) {
		sent := time.Now()
		req, err := dhcpv4.New(c.modifiers(
			dhcpv4.WithHwAddr(c.mac),
			dhcpv4.WithMessageType(dhcpv4.MessageTypeRequest),
			dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(l.Addr.Addr().AsSlice())),
			dhcpv4.WithBroadcast(true))...)
		if err != nil {
			return nil, fmt.Errorf("dhcp: nic %d: reboot: %w", c.nicID, err)
		}
		return c.request(ctx, nc, req, nclient4.DefaultServers, l.Addr.Addr(), netip.Addr{}, sent, "reboot")
	})
}

func (c *Client) lastRefusal() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastRefused
}
