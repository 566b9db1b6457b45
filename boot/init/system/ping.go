package system

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/ether9/ether9/boot/init/status"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// pinger sends ICMP echo requests to one IPv4 address over one endpoint
// and matches the replies to them by sequence number.
type pinger struct {
	ep       tcpip.Endpoint
	wq       waiter.Queue
	entry    waiter.Entry
	readable chan struct{}
	to       tcpip.FullAddress
	seq      uint16
	sent     map[uint16]time.Time
}

func newPinger(s *stack.Stack, dst netip.Addr) (*pinger, error) {
	if !dst.Is4() {
		return nil, fmt.Errorf("ping %v: only IPv4", dst)
	}
	p := &pinger{to: tcpip.FullAddress{Addr: tcpip.AddrFrom4(dst.As4())}, sent: make(map[uint16]time.Time)}
	ep, terr := s.NewEndpoint(icmp.ProtocolNumber4, ipv4.ProtocolNumber, &p.wq)
	if terr != nil {
		return nil, fmt.Errorf("ping %v: endpoint: %s", dst, terr)
	}
	p.ep = ep
	p.entry, p.readable = waiter.NewChannelEntry(waiter.ReadableEvents)
	p.wq.EventRegister(&p.entry)
	return p, nil
}

func (p *pinger) close() {
	p.wq.EventUnregister(&p.entry)
	p.ep.Close()
}

// send writes the next request.
func (p *pinger) send() error {
	p.seq++
	req := make([]byte, header.ICMPv4MinimumSize+8)
	h := header.ICMPv4(req)
	h.SetType(header.ICMPv4Echo)
	h.SetSequence(p.seq)
	binary.BigEndian.PutUint64(req[header.ICMPv4MinimumSize:], uint64(p.seq)*0x0101010101010101)
	var r bytes.Reader
	r.Reset(req)
	if _, terr := p.ep.Write(&r, tcpip.WriteOptions{To: &p.to}); terr != nil {
		return fmt.Errorf("send: %s", terr)
	}
	p.sent[p.seq] = time.Now()
	return nil
}

// reply waits until a reply to any request sent arrives and returns that
// request's round trip, or until ctx ends or timeout passes (ok false).
// Only the sequence numbers in want count when want is not zero: a late
// answer to an earlier request does not time a later one.
func (p *pinger) reply(ctx context.Context, timeout time.Duration, want uint16) (rtt time.Duration, ok bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, false
		case <-t.C:
			return 0, false
		case <-p.readable:
		}
		for {
			var b bytes.Buffer
			res, terr := p.ep.Read(&b, tcpip.ReadOptions{})
			if terr != nil {
				break // drained (would block) or a transient error: wait again
			}
			r := header.ICMPv4(b.Bytes()[:res.Count])
			if len(r) < header.ICMPv4MinimumSize || r.Type() != header.ICMPv4EchoReply {
				continue
			}
			at, sent := p.sent[r.Sequence()]
			if sent && (want == 0 || r.Sequence() == want) {
				return time.Since(at), true
			}
		}
	}
}

// Ping sends ICMP echo requests to dst, one per interval, until one is
// answered or ctx ends, and returns the round trip of the request that was
// answered. The first requests may wait for ARP, so a late answer to any
// of them counts.
func Ping(ctx context.Context, s *stack.Stack, dst netip.Addr, interval time.Duration) (time.Duration, error) {
	p, err := newPinger(s, dst)
	if err != nil {
		return 0, err
	}
	defer p.close()
	var lastErr error
	for {
		if err := p.send(); err != nil {
			lastErr = err
		}
		if rtt, ok := p.reply(ctx, interval, 0); ok {
			return rtt, nil
		}
		if ctx.Err() != nil {
			if lastErr != nil {
				return 0, fmt.Errorf("ping %v: %w (last: %v)", dst, ctx.Err(), lastErr)
			}
			return 0, fmt.Errorf("ping %v: no reply: %w", dst, ctx.Err())
		}
	}
}

// PingSeries sends n echo requests to dst, each after the previous one's
// reply or its timeout and then a pause of gap, and times each. The pause
// is what shows how fast an idle link answers its first frame: a driver
// that polls has gone to sleep by then, one with an interrupt has not
// lost anything. Requests answered after their timeout count as lost.
func PingSeries(ctx context.Context, s *stack.Stack, dst netip.Addr, n int, gap, timeout time.Duration) (status.PingStats, error) {
	p, err := newPinger(s, dst)
	if err != nil {
		return status.PingStats{}, err
	}
	defer p.close()
	// The first request may wait for ARP: it is not timed.
	if err := p.send(); err != nil {
		return status.PingStats{}, fmt.Errorf("ping %v: %w", dst, err)
	}
	if _, ok := p.reply(ctx, timeout, 0); !ok {
		return status.PingStats{}, fmt.Errorf("ping %v: no reply to the first request in %v", dst, timeout)
	}
	var st status.PingStats
	for st.Sent < n {
		if err := sleepCtx(ctx, gap); err != nil {
			return st, fmt.Errorf("ping %v: %w", dst, err)
		}
		if err := p.send(); err != nil {
			return st, fmt.Errorf("ping %v: %w", dst, err)
		}
		st.Sent++
		if rtt, ok := p.reply(ctx, timeout, p.seq); ok {
			st.RTTs = append(st.RTTs, rtt)
		}
		if ctx.Err() != nil {
			return st, fmt.Errorf("ping %v: %w", dst, ctx.Err())
		}
	}
	slices.Sort(st.RTTs)
	return st, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
