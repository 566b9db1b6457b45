package dhcp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

var (
	fuzzMAC    = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	fuzzServer = netip.MustParseAddr("192.0.2.1")
	fuzzAddr   = netip.MustParsePrefix("192.0.2.50/24")
)

// scriptConn is a PacketConn whose server answers each request with the
// next of its replies, given the request's xid and chaddr when patch is
// set (so a reply reaches the checks past the library's matching).
type scriptConn struct {
	mu      sync.Mutex
	replies [][]byte
	patch   bool
	in      chan []byte
	closed  chan struct{}
	once    sync.Once
}

func newScriptConn(patch bool, replies ...[]byte) *scriptConn {
	return &scriptConn{replies: replies, patch: patch, in: make(chan []byte, 8), closed: make(chan struct{})}
}

func (c *scriptConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.replies) == 0 {
		return len(p), nil
	}
	r := append([]byte(nil), c.replies[0]...)
	c.replies = c.replies[1:]
	if c.patch && len(r) >= 34 && len(p) >= 34 {
		copy(r[4:8], p[4:8])
		copy(r[28:34], p[28:34])
	}
	select {
	case c.in <- r:
	default:
	}
	return len(p), nil
}

func (c *scriptConn) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case r := <-c.in:
		return copy(p, r), &net.UDPAddr{IP: fuzzServer.AsSlice(), Port: ServerPort}, nil
	case <-c.closed:
		return 0, nil, net.ErrClosed
	}
}

func (c *scriptConn) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }
func (c *scriptConn) LocalAddr() net.Addr              { return &net.UDPAddr{Port: ClientPort} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// scriptClient waits wait for each reply: the fuzz targets want it short
// (a reply that comes too late is only another error), the seed test
// long enough for a loaded machine.
func scriptClient(conn *scriptConn, wait time.Duration) *Client {
	c := newClient(1, fuzzMAC, Config{Retransmit: wait, Sends: 1})
	c.open = func(bool) (net.PacketConn, func(), error) { return conn, func() {}, nil }
	return c
}

// reply builds a server message of type t for fuzzMAC.
func reply(t dhcpv4.MessageType, addr netip.Prefix, mods ...dhcpv4.Modifier) []byte {
	m, _ := dhcpv4.New(append([]dhcpv4.Modifier{
		dhcpv4.WithHwAddr(fuzzMAC),
		dhcpv4.WithMessageType(t),
		dhcpv4.WithYourIP(addr.Addr().AsSlice()),
		dhcpv4.WithNetmask(net.CIDRMask(addr.Bits(), 32)),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(fuzzServer.AsSlice())),
		dhcpv4.WithLeaseTime(3600),
		dhcpv4.WithRouter(fuzzServer.AsSlice()),
	}, mods...)...)
	m.OpCode = dhcpv4.OpcodeBootReply
	return m.ToBytes()
}

// heldLease is a lease as an ACK for fuzzAddr makes it.
func heldLease(t testing.TB) *Lease {
	ack, err := dhcpv4.FromBytes(reply(dhcpv4.MessageTypeAck, fuzzAddr))
	if err != nil {
		t.Fatal(err)
	}
	l, err := leaseFrom(ack, fuzzAddr.Addr(), fuzzServer, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkLease is what every lease the client returns must be.
func checkLease(t *testing.T, l *Lease, want netip.Addr) {
	t.Helper()
	if err := CheckAddr(l.Addr.Addr(), net.CIDRMask(l.Addr.Bits(), 32)); err != nil {
		t.Fatalf("lease of a bad address: %v", err)
	}
	if want.IsValid() && l.Addr.Addr() != want {
		t.Fatalf("lease of %v, asked for %v", l.Addr, want)
	}
	if l.Duration < minLease || l.Renew <= 0 || l.Renew > l.Rebind || l.Rebind >= l.Duration || !l.Server.IsValid() {
		t.Fatalf("lease times %v %v %v server %v", l.Renew, l.Rebind, l.Duration, l.Server)
	}
}

func seeds(f *testing.F) {
	good := reply(dhcpv4.MessageTypeAck, fuzzAddr)
	f.Add(reply(dhcpv4.MessageTypeOffer, fuzzAddr), good, true)
	f.Add(reply(dhcpv4.MessageTypeOffer, fuzzAddr), good, false) // wrong xid
	f.Add(reply(dhcpv4.MessageTypeOffer, netip.MustParsePrefix("224.0.0.1/24")), good, true)
	f.Add(reply(dhcpv4.MessageTypeNak, fuzzAddr), reply(dhcpv4.MessageTypeNak, fuzzAddr), true)
	f.Add(good, reply(dhcpv4.MessageTypeAck, fuzzAddr, dhcpv4.WithLeaseTime(0)), true) // zero lease
	f.Add(good, good[:200], true)                                                      // truncated
	bad := append([]byte(nil), good...)
	bad[241] = 200 // an option length past the end
	f.Add(bad, bad, true)
	other := append([]byte(nil), good...)
	other[33] ^= 0xff // another client's chaddr
	f.Add(other, other, false)
}

// FuzzRenew: whatever answers a renewal, the client returns an error or
// a lease of the address it holds; the held lease is never changed.
func FuzzRenew(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, a, b []byte, patch bool) {
		held := heldLease(t)
		before := *held
		conn := newScriptConn(patch, a, b)
		c := scriptClient(conn, time.Millisecond)
		l, err := c.Renew(context.Background(), held)
		if err == nil {
			checkLease(t, l, held.Addr.Addr())
		} else if l != nil {
			t.Fatalf("lease %v with error %v", l, err)
		}
		if held.Addr != before.Addr || held.Duration != before.Duration || held.Acquired != before.Acquired {
			t.Fatalf("held lease changed: %v, was %v", held, &before)
		}
	})
}

// FuzzAcquire: whatever answers DISCOVER and REQUEST, the client returns
// an error or a lease of a unicast host address.
func FuzzAcquire(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, offer, ack []byte, patch bool) {
		c := scriptClient(newScriptConn(patch, offer, ack), time.Millisecond)
		l, err := c.Acquire(context.Background())
		if err != nil {
			if l != nil {
				t.Fatalf("lease %v with error %v", l, err)
			}
			return
		}
		checkLease(t, l, netip.Addr{})
	})
}

func TestAcquireSeeds(t *testing.T) {
	c := scriptClient(newScriptConn(true, reply(dhcpv4.MessageTypeOffer, fuzzAddr), reply(dhcpv4.MessageTypeAck, fuzzAddr)), 2*time.Second)
	l, err := c.Acquire(context.Background())
	if err != nil || l.Addr != fuzzAddr {
		t.Fatalf("lease %v, %v", l, err)
	}
	c = scriptClient(newScriptConn(true, reply(dhcpv4.MessageTypeOffer, fuzzAddr), reply(dhcpv4.MessageTypeNak, fuzzAddr)), 2*time.Second)
	if _, err := c.Acquire(context.Background()); !errors.Is(err, ErrRefused) {
		t.Fatalf("NAK: %v", err)
	}
	c = scriptClient(newScriptConn(true, reply(dhcpv4.MessageTypeOffer, netip.MustParsePrefix("224.0.0.1/24"))), 2*time.Second)
	if _, err := c.Acquire(context.Background()); err == nil || c.Stats().OffersRefused != 1 {
		t.Fatalf("multicast offer: %v, stats %+v", err, c.Stats())
	}
}
