package netstack

import (
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// forwardHold keeps the IPv4 header of a forwarded packet readable until
// the receive path's delivery returns.
//
// gVisor's IPv4 forwarding (ipv4 endpoint.forwardPacketWithRoute) takes
// the header as a slice h, deep-copies the packet, and only then reads
// the TTL through h. The copy clones the packet's buffer and pulls the
// network header up again while the clone shares its chunk, which
// copies the chunk on write; releasing the clone then returns the chunk
// h points into to gVisor's pool. The TTL is read from memory any
// goroutine may already have been handed (the race detector shows a
// peer's or the driver's new buffer written over it). IPv6 reads its hop
// limit before the copy.
//
// The stack's nftables forward hook runs between the two: CheckForward
// takes a reference to the chunk h points into, so the copy's release
// leaves it alive, and the receive path drops that reference once
// delivery has returned, on the goroutine that read h.
type forwardHold struct {
	ours func(tcpip.NICID) bool // the NICs whose receive path releases holds
	n    atomic.Int32           // holds taken and not released: the receive path's fast check
	mu   sync.Mutex
	held []heldHeader
}

type heldHeader struct {
	pkt *stack.PacketBuffer
	v   *buffer.View
}

// take holds pkt's network header view.
func (f *forwardHold) take(pkt *stack.PacketBuffer) {
	if !f.ours(pkt.NICID) {
		return // received elsewhere: nobody would release it
	}
	v := pkt.NetworkHeader().View()
	if v == nil {
		return
	}
	f.mu.Lock()
	f.held = append(f.held, heldHeader{pkt, v})
	f.mu.Unlock()
	f.n.Add(1)
}

// release drops the holds taken while pkt was being delivered. f may be
// nil: an endpoint outside a Stack holds nothing.
func (f *forwardHold) release(pkt *stack.PacketBuffer) {
	if f == nil || f.n.Load() == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.held[:0]
	for _, h := range f.held {
		if h.pkt != pkt {
			kept = append(kept, h)
			continue
		}
		h.v.Release()
		f.n.Add(-1)
	}
	clear(f.held[len(kept):])
	f.held = kept
}

// forwardHook is the stack's nftables: it accepts every packet at every
// hook, and holds the header of an IPv4 packet being forwarded.
type forwardHook struct{ f *forwardHold }

var _ stack.NFTablesInterface = forwardHook{}

func (h forwardHook) CheckForward(pkt *stack.PacketBuffer, r *stack.Route, af stack.AddressFamily) bool {
	// The route is given only from forwardPacketWithRoute, the caller
	// that reads the header after copying the packet.
	if r != nil && af == stack.IP {
		h.f.take(pkt)
	}
	return true
}

func (forwardHook) CheckPrerouting(*stack.PacketBuffer, *stack.Route, stack.AddressFamily) bool {
	return true
}

func (forwardHook) CheckInput(*stack.PacketBuffer, *stack.Route, stack.AddressFamily) bool {
	return true
}

func (forwardHook) CheckOutput(*stack.PacketBuffer, *stack.Route, stack.AddressFamily) bool {
	return true
}

func (forwardHook) CheckPostrouting(*stack.PacketBuffer, *stack.Route, stack.AddressFamily) bool {
	return true
}

func (forwardHook) CheckIngress(*stack.PacketBuffer, *stack.Route, stack.AddressFamily) bool {
	return true
}

func (forwardHook) CheckEgress(*stack.PacketBuffer, *stack.Route, stack.AddressFamily) bool {
	return true
}
