// Package transfer moves data between two in-process stacks for tests:
// a TCP stream checked end to end by its SHA-256, and UDP echoes. A
// transfer never hangs: a watchdog fails it when no byte has moved for
// StallAfter, and the error carries both stacks' counters (endpoint and
// driver: per-queue frames, interrupt re-arms and wake-ups) and whatever
// the caller's Diag adds (a device model's ring heads, tails and
// interrupt masks), so a stall says what stopped.
//
// The netstack tests and the drivers' simulated-machine tests share it.
package transfer

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/internal/stall"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
)

// StallAfter is how long a transfer may move nothing before it fails. It
// is no speed target: it only has to outlast TCP's retransmission back-off
// after a burst of losses on a loaded machine under -race (a few seconds).
const StallAfter = 20 * time.Second

// chunk is how much one Write moves, so progress is seen while a large
// transfer runs.
const chunk = 64 << 10

// ErrStalled is what a transfer that stopped moving fails with.
var ErrStalled = errors.New("transfer stalled")

// Options are a transfer's optional parts.
type Options struct {
	// Midway, if set, runs in the sender once half the data is written.
	Midway func()
	// Diag adds to a stall's report what the stacks cannot tell (a
	// device model's registers).
	Diag func() string
	// StallAfter overrides the package's StallAfter, for tests of the
	// watchdog itself.
	StallAfter time.Duration
}

// FullAddr is a's port as gVisor names it.
func FullAddr(a netip.Addr, port uint16) tcpip.FullAddress {
	return tcpip.FullAddress{Addr: tcpip.AddrFromSlice(a.AsSlice()), Port: port}
}

// Proto is the network protocol of a.
func Proto(a netip.Addr) tcpip.NetworkProtocolNumber {
	if a.Is4() {
		return ipv4.ProtocolNumber
	}
	return ipv6.ProtocolNumber
}

// TCP sends n random bytes from client to a listener of server's on dst
// and checks the count and SHA-256 of what arrived.
func TCP(client, server *netstack.Stack, dst netip.Addr, n int, opt Options) error {
	ln, err := gonet.ListenTCP(server.Stack, FullAddr(dst, 0), Proto(dst))
	if err != nil {
		return fmt.Errorf("listen on %v: %w", dst, err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)

	var sent, received atomic.Int64
	var mu sync.Mutex
	var conns []io.Closer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := watch(opt, func() int64 { return sent.Load() + received.Load() }, func() {
		cancel()
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	defer w.Stop()
	keep := func(c io.Closer) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}

	type result struct {
		sum [sha256.Size]byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: fmt.Errorf("accept: %w", err)}
			return
		}
		keep(c)
		defer c.Close()
		h := sha256.New()
		_, err = io.Copy(io.MultiWriter(h, counter{&received}), c)
		var r result
		copy(r.sum[:], h.Sum(nil))
		r.err = err
		got <- r
	}()

	c, err := gonet.DialContextTCP(ctx, client.Stack, FullAddr(dst, port), Proto(dst))
	if err != nil {
		return w.explain(fmt.Errorf("dial %v: %w", dst, err), client, server)
	}
	keep(c)
	data := make([]byte, n)
	rand.Read(data)
	want := sha256.Sum256(data)
	for off := 0; off < n; off += chunk {
		if opt.Midway != nil && off >= n/2 {
			opt.Midway()
			opt.Midway = nil
		}
		m, err := c.Write(data[off:min(off+chunk, n)])
		sent.Add(int64(m))
		if err != nil {
			c.Close()
			return w.explain(fmt.Errorf("TCP to %v: write at %d of %d: %w", dst, off, n, err), client, server)
		}
	}
	c.Close()
	r := <-got
	switch {
	case r.err != nil:
		return w.explain(fmt.Errorf("TCP to %v: received %d of %d bytes: %w", dst, received.Load(), n, r.err), client, server)
	case received.Load() != int64(n) || r.sum != want:
		return w.explain(fmt.Errorf("TCP to %v: received %d bytes sha256 %x, sent %d bytes sha256 %x", dst, received.Load(), r.sum, n, want), client, server)
	}
	return nil
}

// UDPEcho sends a datagram of size bytes from client (at src) to an echo
// socket of server's on dst, port 7, and checks the echo; a lost
// datagram is sent again, up to five times, a second apart.
func UDPEcho(client, server *netstack.Stack, src, dst netip.Addr, size int, opt Options) error {
	srv, err := gonet.DialUDP(server.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(dst.AsSlice()), Port: 7}, nil, Proto(dst))
	if err != nil {
		return fmt.Errorf("echo socket on %v: %w", dst, err)
	}
	defer srv.Close()
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			srv.WriteTo(buf[:n], from)
		}
	}()
	to := FullAddr(dst, 7)
	from := FullAddr(src, 0)
	cl, err := gonet.DialUDP(client.Stack, &from, &to, Proto(dst))
	if err != nil {
		return fmt.Errorf("udp socket on %v: %w", src, err)
	}
	defer cl.Close()
	msg := make([]byte, size)
	rand.Read(msg)
	reply := make([]byte, size+1)
	for try := 0; ; try++ {
		if _, err := cl.Write(msg); err != nil {
			return fmt.Errorf("udp %v -> %v: write: %w", src, dst, err)
		}
		cl.SetReadDeadline(time.Now().Add(time.Second))
		n, err := cl.Read(reply)
		if err == nil {
			if !bytes.Equal(reply[:n], msg) {
				return fmt.Errorf("udp echo of %d bytes came back as %d different bytes", size, n)
			}
			return nil
		}
		if try == 4 {
			return fmt.Errorf("udp echo of %d bytes %v -> %v, 5 tries: %w\n%s", size, src, dst, err, Report(opt.Diag, client, server))
		}
	}
}

// counter is a writer that only counts.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	return len(b), nil
}

// watchdog aborts a transfer whose progress count stops moving.
type watchdog struct {
	opt Options
	*stall.Watchdog
}

func watch(opt Options, progress func() int64, abort func()) *watchdog {
	limit := opt.StallAfter
	if limit <= 0 {
		limit = StallAfter
	}
	return &watchdog{opt: opt, Watchdog: stall.Watch(limit, progress, abort)}
}

// explain turns the error of an aborted transfer into a stall report;
// other errors pass with the counters added.
func (w *watchdog) explain(err error, a, b *netstack.Stack) error {
	if fired, idle := w.Fired(); fired {
		return fmt.Errorf("%w: no byte moved for %v (%v)\n%s", ErrStalled, idle.Round(time.Millisecond), err, Report(w.opt.Diag, a, b))
	}
	return fmt.Errorf("%w\n%s", err, Report(w.opt.Diag, a, b))
}

// Report lists, for each stack's interfaces, the endpoint's and the
// driver's counters that are not zero, then what diag adds.
func Report(diag func() string, stacks ...*netstack.Stack) string {
	var b strings.Builder
	for i, s := range stacks {
		for _, ep := range s.Endpoints {
			name := ep.NIC().Name()
			fmt.Fprintf(&b, "stack %d %s endpoint: %s\n", i, name, nonZero(ep.Stats()))
			fmt.Fprintf(&b, "stack %d %s driver: %s\n", i, name, nonZero(ep.NIC().Stats()))
		}
	}
	if diag != nil {
		b.WriteString(diag())
	}
	return b.String()
}

func nonZero(st []nic.Stat) string {
	var b strings.Builder
	for _, s := range st {
		if s.Value != 0 {
			fmt.Fprintf(&b, " %s=%d", s.Name, s.Value)
		}
	}
	return strings.TrimSpace(b.String())
}
