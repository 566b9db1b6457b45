package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/ether9/ether9/boot/init/status"
)

// pinger sends ICMP echo requests over a raw socket (PID 1 is root) and
// matches replies by identifier and sequence number.
type pinger struct {
	c    *icmp.PacketConn
	to   *net.IPAddr
	id   int
	seq  int
	sent map[int]time.Time
}

func newPinger(dst netip.Addr) (*pinger, error) {
	c, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return nil, fmt.Errorf("ping %v: %w", dst, err)
	}
	return &pinger{c: c, to: &net.IPAddr{IP: dst.AsSlice()}, id: os.Getpid() & 0xffff, sent: make(map[int]time.Time)}, nil
}

func (p *pinger) send() error {
	p.seq = (p.seq + 1) & 0xffff
	m := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: p.id, Seq: p.seq, Data: []byte("ether9 reference")}}
	b, err := m.Marshal(nil)
	if err != nil {
		return err
	}
	if _, err := p.c.WriteTo(b, p.to); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	p.sent[p.seq] = time.Now()
	return nil
}

// reply waits up to timeout for the answer to request seq (any request
// of ours when seq is 0) and returns its round trip.
func (p *pinger) reply(ctx context.Context, timeout time.Duration, seq int) (time.Duration, bool) {
	end := time.Now().Add(timeout)
	buf := make([]byte, 1500)
	p.c.SetReadDeadline(end)
	for ctx.Err() == nil {
		n, _, err := p.c.ReadFrom(buf)
		if err != nil {
			return 0, false // the deadline, or the socket failed
		}
		m, err := icmp.ParseMessage(1, buf[:n])
		if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
			continue
		}
		e, ok := m.Body.(*icmp.Echo)
		if !ok || e.ID != p.id || (seq != 0 && e.Seq != seq) {
			continue
		}
		if at, ok := p.sent[e.Seq]; ok {
			return time.Since(at), true
		}
	}
	return 0, false
}

// pingSeries is the status server's series (system.PingSeries) over
// Linux's stack: a first request untimed (it may wait for ARP), then n
// requests each gap after the previous one's answer or timeout.
func pingSeries(ctx context.Context, dst netip.Addr, n int, gap, timeout time.Duration) (status.PingStats, error) {
	p, err := newPinger(dst)
	if err != nil {
		return status.PingStats{}, err
	}
	defer p.c.Close()
	if err := p.send(); err != nil {
		return status.PingStats{}, fmt.Errorf("ping %v: %w", dst, err)
	}
	if _, ok := p.reply(ctx, timeout, 0); !ok {
		return status.PingStats{}, fmt.Errorf("ping %v: no reply to the first request in %v", dst, timeout)
	}
	var st status.PingStats
	for st.Sent < n {
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("ping %v: %w", dst, ctx.Err())
		case <-time.After(gap):
		}
		if err := p.send(); err != nil {
			return st, fmt.Errorf("ping %v: %w", dst, err)
		}
		st.Sent++
		if rtt, ok := p.reply(ctx, timeout, p.seq); ok {
			st.RTTs = append(st.RTTs, rtt)
		}
	}
	slices.Sort(st.RTTs)
	return st, nil
}
