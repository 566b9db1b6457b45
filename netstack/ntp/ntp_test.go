package ntp_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ether9/ether9/netstack/ntp"
	"github.com/ether9/ether9/netstack/ntp/ntptest"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// stackOn is a stack with one NIC on ep holding addr/24.
func stackOn(t *testing.T, ep stack.LinkEndpoint, addr netip.Addr) *stack.Stack {
	t.Helper()
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{udp.NewProtocol},
	})
	if err := s.CreateNIC(1, ep); err != nil {
		t.Fatal(err)
	}
	pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(addr.As4()), PrefixLen: 24}}
	if err := s.AddProtocolAddress(1, pa, stack.AddressProperties{}); err != nil {
		t.Fatal(err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: pa.AddressWithPrefix.Subnet(), NIC: 1}})
	t.Cleanup(func() {
		s.Close()
		s.Wait()
	})
	return s
}

// The offset a server an hour ahead reports comes back over the stack.
func TestQueryOverStack(t *testing.T) {
	a, b := pipe.New("\x02\x00\x00\x00\x00\x01", "\x02\x00\x00\x00\x00\x02", 1500)
	client := stackOn(t, a, netip.MustParseAddr("192.0.2.2"))
	server := stackOn(t, b, netip.MustParseAddr("192.0.2.1"))
	srv, err := ntptest.Start(server, 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r, err := ntp.Query(client, netip.MustParseAddrPort("192.0.2.1:0"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Offset - time.Hour; d < -time.Second || d > time.Second || r.Stratum != 2 || r.Server.Port() != ntp.Port {
		t.Errorf("result %+v, want an offset of 1h", r)
	}
	// A server that does not answer is an error, not a hang.
	if _, err := ntp.Query(client, netip.MustParseAddrPort("192.0.2.9:123"), 200*time.Millisecond); err == nil {
		t.Errorf("an answer from nobody")
	}
}
