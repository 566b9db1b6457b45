package netstack_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/ether9/ether9/internal/transfer"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// Documentation addresses (RFC 5737, RFC 3849): they exist only inside
// the in-process stacks.
var (
	addrA  = netip.MustParsePrefix("192.0.2.1/24")
	addrB  = netip.MustParsePrefix("192.0.2.2/24")
	addrA6 = netip.MustParsePrefix("2001:db8::1/64")
	addrB6 = netip.MustParsePrefix("2001:db8::2/64")
)

// fakePair is two stacks on cross-wired fake NICs.
type fakePair struct {
	a, b   *fakeNIC
	sa, sb *netstack.Stack
}

func newFakePair(t *testing.T, opt netstack.Options) *fakePair {
	t.Helper()
	p := &fakePair{a: newFakeNIC("ether0", 1), b: newFakeNIC("ether0", 2)}
	crossWire(p.a, p.b)
	var err error
	p.sa, err = netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: p.a, Addrs: []netip.Prefix{addrA, addrA6}, Endpoint: opt})
	if err != nil {
		t.Fatal(err)
	}
	p.sb, err = netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: p.b, Addrs: []netip.Prefix{addrB, addrB6}, Endpoint: opt})
	if err != nil {
		p.sa.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.sa.Close()
		p.sb.Close()
	})
	return p
}

// transferTCP sends n random bytes from the client stack to a listener on
// the server stack and checks them on arrival (transfer.TCP); between, if
// set, runs in the sender after half the data. A transfer that moves
// nothing for transfer.StallAfter fails with both stacks' counters.
func transferTCP(t *testing.T, client, server *netstack.Stack, dst netip.Addr, n int, between func()) {
	t.Helper()
	if err := transfer.TCP(client, server, dst, n, transfer.Options{Midway: between}); err != nil {
		t.Fatal(err)
	}
}

// udpEcho sends a datagram from client to an echo socket on server and
// checks the echo (transfer.UDPEcho).
func udpEcho(t *testing.T, client, server *netstack.Stack, src, dst netip.Addr, size int) {
	t.Helper()
	if err := transfer.UDPEcho(client, server, src, dst, size, transfer.Options{}); err != nil {
		t.Fatal(err)
	}
}

// ping sends one ICMP echo request and waits for the reply.
func ping(t *testing.T, s *netstack.Stack, dst netip.Addr) error {
	t.Helper()
	var wq waiter.Queue
	tp, np := icmp.ProtocolNumber4, ipv4.ProtocolNumber
	if !dst.Is4() {
		tp, np = icmp.ProtocolNumber6, ipv6.ProtocolNumber
	}
	ep, terr := s.NewEndpoint(tp, np, &wq)
	if terr != nil {
		return fmt.Errorf("icmp endpoint: %s", terr)
	}
	defer ep.Close()
	if terr := ep.Connect(transfer.FullAddr(dst, 0)); terr != nil {
		return fmt.Errorf("connect: %s", terr)
	}
	req := make([]byte, header.ICMPv4MinimumSize+32)
	if dst.Is4() {
		req[0] = byte(header.ICMPv4Echo)
	} else {
		req[0] = byte(header.ICMPv6EchoRequest)
	}
	copy(req[8:], "ether9 ping payload, 32 bytes!!")
	we, ch := waiter.NewChannelEntry(waiter.ReadableEvents)
	wq.EventRegister(&we)
	defer wq.EventUnregister(&we)
	for try := 0; try < 5; try++ {
		var r bytes.Reader
		r.Reset(req)
		if _, terr := ep.Write(&r, tcpip.WriteOptions{}); terr != nil {
			return fmt.Errorf("write: %s", terr)
		}
		deadline := time.After(time.Second)
		for {
			var out bytes.Buffer
			_, terr := ep.Read(&out, tcpip.ReadOptions{})
			if terr == nil {
				b := out.Bytes()
				if len(b) >= 8 && bytes.Equal(b[8:], req[8:]) {
					return nil
				}
				continue
			}
			if _, ok := terr.(*tcpip.ErrWouldBlock); !ok {
				return fmt.Errorf("read: %s", terr)
			}
			select {
			case <-ch:
				continue
			case <-deadline:
			}
			break
		}
	}
	return fmt.Errorf("no echo reply from %v", dst)
}

// frame builds an Ethernet+IPv4+UDP frame from src to dst with payload,
// with a correct checksum unless corrupt.
func udpFrame(srcMAC, dstMAC [6]byte, src, dst netip.Addr, port uint16, payload []byte, corrupt bool) []byte {
	l := header.EthernetMinimumSize + header.IPv4MinimumSize + header.UDPMinimumSize + len(payload)
	b := make([]byte, l)
	header.Ethernet(b).Encode(&header.EthernetFields{SrcAddr: tcpip.LinkAddress(srcMAC[:]), DstAddr: tcpip.LinkAddress(dstMAC[:]), Type: ipv4.ProtocolNumber})
	ip := header.IPv4(b[header.EthernetMinimumSize:])
	s, d := tcpip.AddrFromSlice(src.AsSlice()), tcpip.AddrFromSlice(dst.AsSlice())
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(l - header.EthernetMinimumSize), ID: 1, TTL: 64, Protocol: uint8(header.UDPProtocolNumber), SrcAddr: s, DstAddr: d})
	ip.SetChecksum(^ip.CalculateChecksum())
	u := header.UDP(ip[header.IPv4MinimumSize:])
	u.Encode(&header.UDPFields{SrcPort: 9999, DstPort: port, Length: uint16(header.UDPMinimumSize + len(payload))})
	copy(u[header.UDPMinimumSize:], payload)
	xsum := header.PseudoHeaderChecksum(header.UDPProtocolNumber, s, d, uint16(len(u)))
	u.SetChecksum(^u.CalculateChecksum(checksum.Checksum(u[header.UDPMinimumSize:], xsum)))
	if corrupt {
		u[header.UDPMinimumSize] ^= 0xff
	}
	return b
}

func stat(t *testing.T, ep *netstack.Endpoint, name string) uint64 {
	t.Helper()
	v, ok := ep.Stat(name)
	if !ok {
		t.Fatalf("no endpoint counter %q", name)
	}
	return v
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// within runs f and fails the test if it has not returned after d: a hang
// becomes a failure that names what hung, not a killed run.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}
