package dhcp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

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
	ServerPort = 67
	ClientPort = 68
)

// Config tunes a Client. The zero value gives the defaults.
type Config struct {
	// Timeout bounds a whole acquisition when the context has no earlier
	// deadline. Default 10 s.
	Timeout time.Duration
	// Retransmit is the first wait for a reply; it doubles after every
	// unanswered send, up to 64 s as RFC 2131 section 4.1 says. Default 1 s.
	Retransmit time.Duration
	// Hostname, if set, is sent in option 12.
	Hostname string
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Retransmit <= 0 {
		c.Retransmit = time.Second
	}
	return c
}

// Lease is what the server granted.
type Lease struct {
	Addr     netip.Prefix // the address with the subnet mask's length
	Router   netip.Addr   // first router (option 3); invalid if none
	DNS      []netip.Addr
	Server   netip.Addr    // server identifier (option 54)
	Duration time.Duration // lease time (option 51)
	Renew    time.Duration // T1 (option 58, default half the lease)
}

func (l *Lease) String() string {
	return fmt.Sprintf("%v gw %v dns %v lease %v from %v", l.Addr, l.Router, l.DNS, l.Duration, l.Server)
}

// Client acquires a lease for one NIC of a gVisor stack.
type Client struct {
	s     *stack.Stack
	nicID tcpip.NICID
	mac   [6]byte
	cfg   Config
}

// NewClient returns a client for NIC nicID of s.
func NewClient(s *stack.Stack, nicID tcpip.NICID, cfg Config) (*Client, error) {
	la := s.NICInfo()[nicID].LinkAddress
	if len(la) != 6 {
		return nil, fmt.Errorf("dhcp: nic %d: link address %q is not Ethernet", nicID, la)
	}
	return &Client{s: s, nicID: nicID, mac: [6]byte([]byte(la)), cfg: cfg.withDefaults()}, nil
}

// Acquire runs DISCOVER, OFFER, REQUEST, ACK and returns the lease. It does
// not configure the stack: the caller adds the address and routes. While
// it runs, the NIC holds the unspecified address 0.0.0.0 so that it can
// send from it (RFC 2131 section 4.1); that is removed again on return.
func (c *Client) Acquire(ctx context.Context) (*Lease, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	any4 := tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: header.IPv4Any, PrefixLen: 0},
	}
	if err := c.s.AddProtocolAddress(c.nicID, any4, stack.AddressProperties{}); err != nil {
		if _, dup := err.(*tcpip.ErrDuplicateAddress); !dup {
			return nil, fmt.Errorf("dhcp: nic %d: add 0.0.0.0: %s", c.nicID, err)
		}
	}
	defer c.s.RemoveAddress(c.nicID, header.IPv4Any)

	conn, err := c.bind(tcpip.Address{})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return c.exchange(ctx, conn)
}

// bind opens the client's UDP socket: port 68 of local (any if empty) on
// this NIC, allowed to broadcast.
func (c *Client) bind(local tcpip.Address) (*gonet.UDPConn, error) {
	var wq waiter.Queue
	ep, terr := c.s.NewEndpoint(udp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if terr != nil {
		return nil, fmt.Errorf("dhcp: nic %d: udp endpoint: %s", c.nicID, terr)
	}
	ep.SocketOptions().SetBroadcast(true)
	if terr := ep.SocketOptions().SetBindToDevice(int32(c.nicID)); terr != nil {
		ep.Close()
		return nil, fmt.Errorf("dhcp: nic %d: bind to device: %s", c.nicID, terr)
	}
	if terr := ep.Bind(tcpip.FullAddress{NIC: c.nicID, Addr: local, Port: ClientPort}); terr != nil {
		ep.Close()
		return nil, fmt.Errorf("dhcp: nic %d: bind :%d: %s", c.nicID, ClientPort, terr)
	}
	return gonet.NewUDPConn(&wq, ep), nil
}

// exchange does the two round trips on conn.
func (c *Client) exchange(ctx context.Context, conn *gonet.UDPConn) (*Lease, error) {
	var x [4]byte
	if _, err := rand.Read(x[:]); err != nil {
		return nil, fmt.Errorf("dhcp: transaction id: %w", err)
	}
	xid := binary.BigEndian.Uint32(x[:])

	discover := c.request(xid, msgDiscover)
	offer, err := c.roundTrip(ctx, conn, broadcast, discover, func(m *message) error {
		if m.msgType() != msgOffer {
			return fmt.Errorf("%v, want OFFER", m.msgType())
		}
		if !m.yiaddr.IsValid() || m.yiaddr.IsUnspecified() || m.yiaddr == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
			return fmt.Errorf("OFFER of address %v", m.yiaddr)
		}
		if _, ok := m.addr(optServerID); !ok {
			return errors.New("OFFER without server identifier (option 54)")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	server, _ := offer.addr(optServerID)
	req := c.request(xid, msgRequest)
	req.opts[optRequestedIP] = offer.yiaddr.AsSlice()
	req.opts[optServerID] = server.AsSlice()
	ack, err := c.roundTrip(ctx, conn, broadcast, req, func(m *message) error {
		if id, ok := m.addr(optServerID); ok && id != server {
			return fmt.Errorf("%v from server %v, we asked %v", m.msgType(), id, server)
		}
		switch m.msgType() {
		case msgAck:
			if m.yiaddr != offer.yiaddr {
				return fmt.Errorf("ACK for %v, we requested %v", m.yiaddr, offer.yiaddr)
			}
			return nil
		case msgNak:
			return nil
		}
		return fmt.Errorf("%v, want ACK or NAK", m.msgType())
	})
	if err != nil {
		return nil, err
	}
	if ack.msgType() == msgNak {
		return nil, fmt.Errorf("dhcp: request %v from %v: %w", offer.yiaddr, server, ErrRefused)
	}
	return leaseFrom(ack, server)
}

// Renew asks the server that granted l to extend it (RFC 2131 section
// 4.4.5, RENEWING): a REQUEST from the leased address, sent straight to
// the server. The NIC must hold l.Addr. It returns the extended lease; a
// NAK is an error, and the caller must then stop using the address.
func (c *Client) Renew(ctx context.Context, l *Lease) (*Lease, error) {
	if l == nil || !l.Addr.IsValid() || !l.Server.IsValid() {
		return nil, fmt.Errorf("dhcp: nic %d: renew needs a lease with an address and a server", c.nicID)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	conn, err := c.bind(tcpip.AddrFromSlice(l.Addr.Addr().AsSlice()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var x [4]byte
	if _, err := rand.Read(x[:]); err != nil {
		return nil, fmt.Errorf("dhcp: transaction id: %w", err)
	}
	req := c.request(binary.BigEndian.Uint32(x[:]), msgRequest)
	req.flags = 0 // we can take unicast now
	req.ciaddr = l.Addr.Addr()
	dst := &net.UDPAddr{IP: l.Server.AsSlice(), Port: ServerPort}
	ack, err := c.roundTrip(ctx, conn, dst, req, func(m *message) error {
		switch m.msgType() {
		case msgAck:
			if m.yiaddr != l.Addr.Addr() {
				return fmt.Errorf("ACK for %v, we hold %v", m.yiaddr, l.Addr.Addr())
			}
			return nil
		case msgNak:
			return nil
		}
		return fmt.Errorf("%v, want ACK or NAK", m.msgType())
	})
	if err != nil {
		return nil, err
	}
	if ack.msgType() == msgNak {
		return nil, fmt.Errorf("dhcp: renew %v from %v: %w", l.Addr, l.Server, ErrRefused)
	}
	return leaseFrom(ack, l.Server)
}

// leaseFrom reads the lease out of an ACK.
func leaseFrom(ack *message, server netip.Addr) (*Lease, error) {
	mask, ok := ack.addr(optSubnetMask)
	if !ok {
		return nil, fmt.Errorf("dhcp: ACK from %v has no subnet mask (option 1)", server)
	}
	ones, bits := net.IPMask(mask.AsSlice()).Size()
	if bits == 0 {
		return nil, fmt.Errorf("dhcp: ACK from %v: subnet mask %v is not contiguous", server, mask)
	}
	d, ok := ack.seconds(optLeaseTime)
	if !ok {
		return nil, fmt.Errorf("dhcp: ACK from %v has no lease time (option 51)", server)
	}
	l := &Lease{
		Addr:     netip.PrefixFrom(ack.yiaddr, ones),
		DNS:      ack.addrs(optDNS),
		Server:   server,
		Duration: d,
		Renew:    d / 2,
	}
	if t1, ok := ack.seconds(optRenewalTime); ok && t1 < d {
		l.Renew = t1
	}
	if r := ack.addrs(optRouter); len(r) > 0 {
		l.Router = r[0]
	}
	return l, nil
}

// request builds a client message of type t.
func (c *Client) request(xid uint32, t msgType) *message {
	m := &message{
		op:     opRequest,
		xid:    xid,
		flags:  flagBroadcast, // we cannot take unicast before we have the address
		chaddr: c.mac,
		opts: map[uint8][]byte{
			optMessageType:  {byte(t)},
			optParamRequest: {optSubnetMask, optRouter, optDNS, optLeaseTime, optRenewalTime},
			optMaxSize:      {0x05, 0xdc}, // 1500
			optClientID:     append([]byte{htypeEthernet}, c.mac[:]...),
		},
	}
	if c.cfg.Hostname != "" {
		m.opts[optHostname] = []byte(c.cfg.Hostname)
	}
	return m
}

// broadcast is where a client without a lease sends.
var broadcast = &net.UDPAddr{IP: net.IPv4bcast, Port: ServerPort}

// roundTrip sends m to dst and waits for a reply to it that accept takes,
// retransmitting with exponential back-off until ctx ends. Replies for
// other transactions are skipped; malformed or unacceptable ones are
// counted and the last reason is reported if nothing good arrives.
func (c *Client) roundTrip(ctx context.Context, conn *gonet.UDPConn, dst *net.UDPAddr, m *message, accept func(*message) error) (*message, error) {
	pkt := m.marshal()
	buf := make([]byte, 1500)
	wait := c.cfg.Retransmit
	sent, bad := 0, 0
	var lastBad error
	for {
		if _, err := conn.WriteTo(pkt, dst); err != nil {
			return nil, fmt.Errorf("dhcp: send %v: %w", m.msgType(), err)
		}
		sent++
		next := time.Now().Add(wait)
		if d, ok := ctx.Deadline(); ok && d.Before(next) {
			next = d
		}
		for {
			if err := ctx.Err(); err != nil {
				return nil, c.timeout(m, sent, bad, lastBad, err)
			}
			if err := conn.SetReadDeadline(next); err != nil {
				return nil, fmt.Errorf("dhcp: set deadline: %w", err)
			}
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err) {
					break // retransmit, or give up at the top
				}
				return nil, fmt.Errorf("dhcp: waiting for reply to %v: %w", m.msgType(), err)
			}
			r, err := parse(buf[:n])
			if err == nil && (r.op != opReply || r.xid != m.xid || r.chaddr != c.mac) {
				continue // another client's conversation
			}
			if err == nil {
				err = accept(r)
			}
			if err != nil {
				bad++
				lastBad = err
				continue
			}
			return r, nil
		}
		if ctx.Err() != nil {
			return nil, c.timeout(m, sent, bad, lastBad, ctx.Err())
		}
		if wait *= 2; wait > 64*time.Second {
			wait = 64 * time.Second
		}
	}
}

func (c *Client) timeout(m *message, sent, bad int, lastBad, cause error) error {
	if bad > 0 {
		return fmt.Errorf("dhcp: nic %d: no usable reply to %v after %d sends: %d replies ignored, last: %v (%w)", c.nicID, m.msgType(), sent, bad, lastBad, cause)
	}
	return fmt.Errorf("dhcp: nic %d: no reply to %v after %d sends (%w)", c.nicID, m.msgType(), sent, cause)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
