package simmachine

import (
	"context"
	"io"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// lossyPort is one end of a cable between two peers whose frames to the
// other end pass through drop, which may keep them from arriving.
type lossyPort struct {
	mu   sync.Mutex
	far  *lossyPort
	recv func([]byte)
	drop func(frame []byte) bool // nil: nothing dropped
}

func (p *lossyPort) Send(frame []byte) {
	if p.drop != nil && p.drop(frame) {
		return
	}
	p.far.mu.Lock()
	fn := p.far.recv
	p.far.mu.Unlock()
	if fn != nil {
		fn(frame)
	}
}

func (p *lossyPort) Receive(fn func([]byte)) {
	p.mu.Lock()
	p.recv = fn
	p.mu.Unlock()
}

// A push that loses what a receiver starved of descriptors loses (a hole,
// then a block that arrives and is SACKed, then every frame of the rest
// of the flight) must recover at the speed of the link, not at two
// segments per RTO. The loss is the one a failed self-test recorded on
// the wire: the sender then sat in recovery counting the lost tail as in
// flight, and 16 MiB would have taken minutes.
func TestPeerRecoversFromTailLoss(t *testing.T) {
	const total = 8 << 20
	var frames atomic.Int64
	var tailFrom int64 // when the tail's loss began, unix ns; 0: not yet
	var high uint32    // the highest sequence number sent so far
	// The sender's first transmissions, counted from the first: 2000-2099
	// are lost, 2100-2299 arrive, and from 2300 on everything new is lost
	// for 100 ms, which empties the sender's window into the void.
	// Retransmissions pass, as they reach a receiver that polls again.
	drop := func(frame []byte) bool {
		if len(frame) < 1000 {
			return false // ARP, ACKs, the handshake
		}
		ip := header.IPv4(frame[header.EthernetMinimumSize:])
		seq := header.TCP(ip.Payload()).SequenceNumber()
		if high != 0 && int32(seq-high) <= 0 {
			return false
		}
		high = seq
		switch n := frames.Add(1); {
		case n >= 2000 && n < 2100:
			return true
		case n >= 2300:
			now := time.Now().UnixNano()
			if tailFrom == 0 {
				tailFrom = now
			}
			return now-tailFrom < int64(100*time.Millisecond)
		}
		return false
	}
	a, b := &lossyPort{drop: drop}, &lossyPort{}
	a.far, b.far = b, a
	sendAddr, recvAddr := netip.MustParsePrefix("10.0.9.2/24"), netip.MustParsePrefix("10.0.9.15/24")
	sender, err := NewPeer(a, [6]byte{0x52, 0x55, 0x0a, 0, 9, 2}, []netip.Prefix{sendAddr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	receiver, err := NewPeer(b, [6]byte{0x52, 0x55, 0x0a, 0, 9, 15}, []netip.Prefix{recvAddr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer receiver.Close()

	ln, err := gonet.ListenTCP(receiver.Stack, tcpip.FullAddress{NIC: 1, Port: 80}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var got atomic.Int64
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			got.Add(int64(n))
			if err == io.EOF {
				done <- nil
				return
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := gonet.DialContextTCP(ctx, sender.Stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(recvAddr.Addr().As4()), Port: 80}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c.Write(make([]byte, total))
		c.CloseWrite()
	}()
	defer c.Close()

	// One RTO is what the tail's loss costs (nothing arrives to SACK
	// it); a sender that needs one per two segments of the tail has
	// crawled, however fast the machine. Without progress for stuck
	// the transfer has stopped altogether.
	const maxTimeouts = 3
	const stuck = 5 * time.Second
	start, last, lastAt := time.Now(), int64(0), time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if n := got.Load(); n != total {
				t.Fatalf("received %d bytes, sent %d", n, total)
			}
			return
		case <-tick.C:
		}
		if n := got.Load(); n != last {
			last, lastAt = n, time.Now()
		}
		if to := sender.Stack.Stats().TCP.Timeouts.Value(); time.Since(lastAt) > stuck || to > maxTimeouts {
			t.Fatalf("after %v and %d RTOs, %d of %d bytes received (%d new frames of data sent), last progress %v ago; the sender:\n%s",
				time.Since(start).Round(time.Millisecond), to, last, total, frames.Load(), time.Since(lastAt).Round(time.Millisecond),
				strings.Join(sender.Report(), "\n"))
		}
	}
}
