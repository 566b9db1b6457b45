package simmachine

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"github.com/ether9/ether9/kernel/sim/wire"
)

// peerQueue is how many frames may wait in each direction between the
// wire and the peer's stack.
const peerQueue = 1024

// minFrame is the shortest Ethernet frame without its check sequence.
const minFrame = 60

// Peer is the host side of a simulated wire: a gVisor stack with one
// Ethernet NIC on the far end of the cable, playing the part of QEMU's
// user-network gateway (it answers ARP, neighbour discovery and ping, and
// TCP connections to the machine start from it). Its default routes lead
// through the machine, so that peers on two wires reach each other when
// the machine forwards.
type Peer struct {
	Stack *stack.Stack
	Addr  netip.Prefix   // the IPv4 address
	Addrs []netip.Prefix // every address, IPv4 and IPv6

	ep     *channel.Endpoint
	in     chan []byte
	inDrop atomic.Uint64 // frames from the wire dropped: in was full
	tcp    tcpSeen
	cancel context.CancelFunc
	done   chan struct{}
}

// NewPeer attaches a stack holding addrs to port, its default routes
// through the gateways (one per IP version; may be empty).
func NewPeer(port wire.Port, mac [6]byte, addrs, gateways []netip.Prefix) (*Peer, error) {
	p := &Peer{Addrs: addrs}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocolProbe(p.tcp.probe), udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
	})
	p.Stack = s
	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	// No RACK: after a loss of the tail of a flight (what a machine whose
	// ring ran out of descriptors loses) gVisor's RACK enters SACK
	// recovery again on the first ACK after each RTO, and its pipe counts
	// the lost tail above the highest SACK block as in flight, so it sends
	// two segments per RTO for as long as the tail lasts. Recovery by
	// duplicate ACKs and SACK (RFC 6675) does not re-enter before the
	// flight is acknowledged, and slow start after the RTO resends the
	// tail at once.
	rack := tcpip.TCPRecovery(0)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &rack)
	ch := channel.New(peerQueue, 1500, tcpip.LinkAddress(mac[:]))
	if err := s.CreateNIC(1, ethernet.New(ch)); err != nil {
		s.Close()
		return nil, fmt.Errorf("simmachine: peer NIC: %s", err)
	}
	var routes []tcpip.Route
	for _, a := range addrs {
		proto := ipv4.ProtocolNumber
		if a.Addr().Is4() {
			if !p.Addr.IsValid() {
				p.Addr = a
			}
		} else {
			proto = ipv6.ProtocolNumber
		}
		pa := tcpip.ProtocolAddress{
			Protocol:          proto,
			AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFromSlice(a.Addr().AsSlice()), PrefixLen: a.Bits()},
		}
		if err := s.AddProtocolAddress(1, pa, stack.AddressProperties{}); err != nil {
			s.Close()
			return nil, fmt.Errorf("simmachine: peer address %v: %s", a, err)
		}
		routes = append(routes, tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: 1})
	}
	for _, g := range gateways {
		all, _ := tcpip.NewSubnet(tcpip.AddrFromSlice(make([]byte, g.Addr().BitLen()/8)), tcpip.MaskFromBytes(make([]byte, g.Addr().BitLen()/8)))
		routes = append(routes, tcpip.Route{Destination: all, Gateway: tcpip.AddrFromSlice(g.Addr().AsSlice()), NIC: 1})
	}
	s.SetRouteTable(routes)

	ctx, cancel := context.WithCancel(context.Background())
	p.ep, p.in, p.cancel, p.done = ch, make(chan []byte, peerQueue), cancel, make(chan struct{})
	// The wire delivers synchronously inside the model's transmit; the
	// frame is copied and handed to the stack from another goroutine so
	// that an answer never re-enters the model from its own engine.
	port.Receive(func(frame []byte) {
		select {
		case p.in <- append([]byte(nil), frame...):
		default: // the stack is behind: drop, as a full NIC queue would
			p.inDrop.Add(1)
		}
	})
	go p.inbound(ctx)
	go p.outbound(ctx, port)
	return p, nil
}

func (p *Peer) inbound(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case frame := <-p.in:
			pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(frame)})
			p.ep.InjectInbound(0, pkt) // the ethernet layer reads the type
			pkt.DecRef()
		}
	}
}

func (p *Peer) outbound(ctx context.Context, port wire.Port) {
	defer close(p.done)
	for {
		pkt := p.ep.ReadContext(ctx)
		if pkt == nil {
			return
		}
		v := pkt.ToView()
		pkt.DecRef()
		frame := v.AsSlice()
		if len(frame) < minFrame {
			// A real NIC pads short frames on transmit; the stack does not.
			frame = append(frame[:len(frame):len(frame)], make([]byte, minFrame-len(frame))...)
		}
		port.Send(frame)
		v.Release()
	}
}

// Report describes the peer's TCP: each connection as it stood at the
// last segment received, the stack's recovery counters, and the frames
// the peer dropped on the way in.
func (p *Peer) Report() []string {
	st := p.Stack.Stats().TCP
	out := p.tcp.lines(p.Stack.Clock().NowMonotonic())
	return append(out, fmt.Sprintf("tcp retransmits %d timeouts %d fast-retransmits %d sack-recoveries %d tlp-recoveries %d spurious-rto %d; frames dropped in %d",
		st.Retransmits.Value(), st.Timeouts.Value(), st.FastRetransmit.Value(), st.SACKRecovery.Value(),
		st.TLPRecovery.Value(), st.SpuriousRTORecovery.Value(), p.inDrop.Load()))
}

// Close stops the peer's stack.
func (p *Peer) Close() {
	p.cancel()
	<-p.done
	p.ep.Close()
	p.Stack.Close()
}
