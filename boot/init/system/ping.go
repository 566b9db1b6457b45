package system

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// Ping sends ICMP echo requests to dst, one per interval, until one is
// answered or ctx ends, and returns the round trip of the request that was
// answered. The first requests may wait for ARP.
func Ping(ctx context.Context, s *stack.Stack, dst netip.Addr, interval time.Duration) (time.Duration, error) {
	if !dst.Is4() {
		return 0, fmt.Errorf("ping %v: only IPv4", dst)
	}
	var wq waiter.Queue
	ep, terr := s.NewEndpoint(icmp.ProtocolNumber4, ipv4.ProtocolNumber, &wq)
	if terr != nil {
		return 0, fmt.Errorf("ping %v: endpoint: %s", dst, terr)
	}
	defer ep.Close()
	entry, readable := waiter.NewChannelEntry(waiter.ReadableEvents)
	wq.EventRegister(&entry)
	defer wq.EventUnregister(&entry)

	to := tcpip.FullAddress{Addr: tcpip.AddrFrom4(dst.As4())}
	sent := make(map[uint16]time.Time)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var lastErr error
	for seq := uint16(1); ; {
		req := make([]byte, header.ICMPv4MinimumSize+8)
		h := header.ICMPv4(req)
		h.SetType(header.ICMPv4Echo)
		h.SetSequence(seq)
		binary.BigEndian.PutUint64(req[header.ICMPv4MinimumSize:], uint64(seq)*0x0101010101010101)
		var r bytes.Reader
		r.Reset(req)
		if _, terr := ep.Write(&r, tcpip.WriteOptions{To: &to}); terr != nil {
			lastErr = fmt.Errorf("send: %s", terr)
		} else {
			sent[seq] = time.Now()
		}
		seq++
	wait:
		for {
			select {
			case <-ctx.Done():
				if lastErr != nil {
					return 0, fmt.Errorf("ping %v: %w (last: %v)", dst, ctx.Err(), lastErr)
				}
				return 0, fmt.Errorf("ping %v: no reply: %w", dst, ctx.Err())
			case <-tick.C:
				break wait
			case <-readable:
				for {
					var b bytes.Buffer
					res, terr := ep.Read(&b, tcpip.ReadOptions{})
					if terr != nil {
						break // drained (would block) or a transient error: wait again
					}
					reply := header.ICMPv4(b.Bytes()[:res.Count])
					if len(reply) < header.ICMPv4MinimumSize || reply.Type() != header.ICMPv4EchoReply {
						continue
					}
					if t, ok := sent[reply.Sequence()]; ok {
						return time.Since(t), nil
					}
				}
			}
		}
	}
}
