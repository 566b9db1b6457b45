package system

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
)

// newPeer is a stack with one channel NIC holding addr/24.
func newPeer(t *testing.T, addr string) (*stack.Stack, *channel.Endpoint) {
	t.Helper()
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{icmp.NewProtocol4},
	})
	ep := channel.New(64, 1500, "")
	if err := s.CreateNIC(1, ep); err != nil {
		t.Fatal(err)
	}
	p := netip.MustParsePrefix(addr)
	pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(p.Addr().As4()), PrefixLen: p.Bits()}}
	if err := s.AddProtocolAddress(1, pa, stack.AddressProperties{}); err != nil {
		t.Fatal(err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: pa.AddressWithPrefix.Subnet(), NIC: 1}})
	t.Cleanup(func() { ep.Close(); s.Close() })
	return s, ep
}

// forward moves every packet a sends to b until ctx ends, dropping the
// first drop of them.
func forward(ctx context.Context, from, to *channel.Endpoint, drop int) {
	forwardUnless(ctx, from, to, func(i int) bool { return i < drop })
}

// forwardUnless moves the packets from sends to to until ctx ends,
// dropping the i-th (from 0) when lose(i).
func forwardUnless(ctx context.Context, from, to *channel.Endpoint, lose func(i int) bool) {
	for i := 0; ; i++ {
		pkt := from.ReadContext(ctx)
		if pkt == nil {
			return
		}
		if lose(i) {
			pkt.DecRef()
			continue
		}
		buf := pkt.ToBuffer()
		pkt.DecRef()
		in := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buf})
		to.InjectInbound(ipv4.ProtocolNumber, in)
		in.DecRef()
	}
}

func TestPingGetsReplyAfterLoss(t *testing.T) {
	a, aep := newPeer(t, "10.0.2.15/24")
	_, bep := newPeer(t, "10.0.2.2/24")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go forward(ctx, aep, bep, 2) // the first two requests are lost
	go forward(ctx, bep, aep, 0)
	rtt, err := Ping(ctx, a, netip.MustParseAddr("10.0.2.2"), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if rtt <= 0 || rtt > 10*time.Second {
		t.Fatalf("round trip %v", rtt)
	}
}

func TestPingTimesOutWithoutPeer(t *testing.T) {
	a, _ := newPeer(t, "10.0.2.15/24")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Ping(ctx, a, netip.MustParseAddr("10.0.2.2"), 10*time.Millisecond); err == nil {
		t.Fatal("ping answered with nobody on the wire")
	}
}

func TestPingSeries(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(i int) bool
		want int // replies out of 6
	}{
		{"lossless", func(int) bool { return false }, 6},
		// Request 0 is the untimed one; of the six timed, 2 and 5 are lost.
		{"two lost", func(i int) bool { return i == 2 || i == 5 }, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, aep := newPeer(t, "10.0.2.15/24")
			_, bep := newPeer(t, "10.0.2.2/24")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The first packet a sends is its ARP request.
			go forwardUnless(ctx, aep, bep, func(i int) bool { return i > 0 && tc.lose(i-1) })
			go forward(ctx, bep, aep, 0)
			st, err := PingSeries(ctx, a, netip.MustParseAddr("10.0.2.2"), 6, time.Millisecond, 200*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if st.Sent != 6 || len(st.RTTs) != tc.want {
				t.Fatalf("%v: want sent 6 received %d", st, tc.want)
			}
			if !slices.IsSorted(st.RTTs) || st.RTTs[0] <= 0 {
				t.Fatalf("round trips %v: want positive, ascending", st.RTTs)
			}
		})
	}
}

func TestPingSeriesWithoutPeer(t *testing.T) {
	a, _ := newPeer(t, "10.0.2.15/24")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := PingSeries(ctx, a, netip.MustParseAddr("10.0.2.2"), 3, 0, 20*time.Millisecond); err == nil {
		t.Fatal("series answered with nobody on the wire")
	}
}
