package simmachine

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// tcpSeen keeps, per connection, the peer's TCP state as it stood after
// the last segment the peer received: what a stalled transfer's report
// needs to tell a sender waiting out its RTO from one facing a closed
// window or one whose ACKs stopped coming. gVisor's probe runs on every
// segment, with the endpoint locked, so it only copies a few fields.
type tcpSeen struct {
	mu    sync.Mutex
	conns map[tcp.TCPEndpointID]tcpConn
}

// tcpConn is one connection's state at its last received segment.
type tcpConn struct {
	at                     tcpip.MonotonicTime
	sndUna, sndNxt         uint32
	sndWnd                 uint32 // the window the receiver last advertised, scaled
	cwnd, ssthresh         int
	outstanding, sackedOut int
	dupAcks                int
	rto, srtt              time.Duration
	recovery               bool
	sndBufUsed, sndBufSize int
	rcvNxt                 uint32
}

func (t *tcpSeen) probe(s *tcp.TCPEndpointState) {
	c := tcpConn{
		at:     s.SegTime,
		sndUna: uint32(s.Sender.SndUna), sndNxt: uint32(s.Sender.SndNxt),
		sndWnd: uint32(s.Sender.SndWnd),
		cwnd:   s.Sender.SndCwnd, ssthresh: s.Sender.Ssthresh,
		outstanding: s.Sender.Outstanding, sackedOut: s.Sender.SackedOut,
		dupAcks: s.Sender.DupAckCount,
		rto:     s.Sender.RTO, srtt: s.Sender.RTTState.SRTT,
		recovery:   s.Sender.FastRecovery.Active,
		sndBufUsed: s.SndBufState.SndBufUsed, sndBufSize: s.SndBufState.SndBufSize,
		rcvNxt: uint32(s.Receiver.RcvNxt),
	}
	t.mu.Lock()
	if t.conns == nil {
		t.conns = make(map[tcp.TCPEndpointID]tcpConn)
	}
	t.conns[s.ID] = c
	t.mu.Unlock()
}

// lines describes every connection the peer saw, the newest segment
// first, its age counted from now.
func (t *tcpSeen) lines(now tcpip.MonotonicTime) []string {
	type conn struct {
		id tcp.TCPEndpointID
		c  tcpConn
	}
	t.mu.Lock()
	var all []conn
	for id, c := range t.conns {
		all = append(all, conn{id, c})
	}
	t.mu.Unlock()
	slices.SortFunc(all, func(a, b conn) int {
		switch {
		case a.c.at.After(b.c.at):
			return -1
		case b.c.at.After(a.c.at):
			return 1
		}
		return 0
	})
	var out []string
	for _, x := range all {
		c := x.c
		out = append(out, fmt.Sprintf("tcp %v:%d -> %v:%d: last segment %v ago, una %d nxt %d (in flight %d) wnd %d cwnd %d ssthresh %d outstanding %d sacked %d dupacks %d recovery %v rto %v srtt %v sndbuf %d/%d rcvnxt %d",
			x.id.LocalAddress, x.id.LocalPort, x.id.RemoteAddress, x.id.RemotePort,
			now.Sub(c.at).Round(time.Millisecond), c.sndUna, c.sndNxt, c.sndNxt-c.sndUna, c.sndWnd,
			c.cwnd, c.ssthresh, c.outstanding, c.sackedOut, c.dupAcks, c.recovery, c.rto, c.srtt,
			c.sndBufUsed, c.sndBufSize, c.rcvNxt))
	}
	return out
}

// Report describes what a stalled transfer's report needs from outside
// the machine: each NIC model's interrupt registers and rings as the
// device sees them, and each peer's TCP.
func (h *Host) Report() []string {
	var out []string
	for i, m := range h.Models {
		if s, ok := m.(interface{ State() string }); ok {
			out = append(out, fmt.Sprintf("nic %d %s", i, s.State()))
		}
	}
	for i, p := range h.Peers {
		for _, l := range p.Report() {
			out = append(out, fmt.Sprintf("peer %d %s", i, l))
		}
	}
	return out
}
