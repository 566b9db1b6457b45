// Package simtest runs ether9 programs on the simulated machine for
// tests: the machine in the test's process, its console collected, its
// peers dialled, and every wait bounded so that a stuck program fails
// the test with what it printed.
package simtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/ether9/ether9"
	"github.com/ether9/ether9/boot/init/simmachine"
)

// Wait is how long a test waits for a console line, a connection or an
// answer before it fails with what it saw.
const Wait = 20 * time.Second

// Console collects a machine's lines.
type Console struct {
	mu    sync.Mutex
	lines []string
}

// Logf adds a line.
func (c *Console) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, fmt.Sprintf(format, args...))
}

func (c *Console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// WaitFor polls until the console has a line containing want.
func (c *Console) WaitFor(t testing.TB, want string) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for time.Now().Before(deadline) {
		if strings.Contains(c.String(), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("console never said %q:\n%s", want, c)
}

// Run starts p with cfg on a simulated machine with the NIC families
// given (one e1000e by default), each cabled to a peer. The memory tracks
// DMA ownership: a buffer the CPU holds written by a device, or a bad
// sync, fails the test. The machine stops at the test's end, within Wait
// or the test fails with every goroutine's stack; the console is logged
// when the test failed.
func Run(t testing.TB, cfg ether9.Config, p ether9.Program, nics ...string) (*simmachine.Host, *Console) {
	t.Helper()
	con := &Console{}
	h, err := simmachine.New(context.Background(), simmachine.Config{NICs: nics, Logf: con.Logf, CheckOwnership: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() {
			h.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(Wait):
			buf := make([]byte, 1<<20)
			t.Errorf("the machine did not stop within %v:\n%s", Wait, buf[:runtime.Stack(buf, true)])
		}
		if errs := h.Machine.Mem.Errors(); len(errs) > 0 {
			t.Errorf("%d DMA ownership misuses, the first: %v", len(errs), errs[0])
		}
		if t.Failed() {
			t.Logf("console:\n%s", con)
		}
	})
	if _, err := cfg.Simulate(h, p, con.Logf); err != nil {
		t.Fatal(err)
	}
	return h, con
}

// Full is a's gVisor address with port.
func Full(a netip.Addr, port uint16) tcpip.FullAddress {
	return tcpip.FullAddress{Addr: tcpip.AddrFromSlice(a.AsSlice()), Port: port}
}

// Proto is a's network protocol.
func Proto(a netip.Addr) tcpip.NetworkProtocolNumber {
	if a.Is4() {
		return ipv4.ProtocolNumber
	}
	return ipv6.ProtocolNumber
}

// Dial connects over s to to, retrying while nothing listens there yet.
func Dial(t testing.TB, s *stack.Stack, to netip.AddrPort) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	c, err := DialRetry(ctx, s, to)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// DialRetry connects over s to to, retrying until ctx ends.
func DialRetry(ctx context.Context, s *stack.Stack, to netip.AddrPort) (net.Conn, error) {
	for {
		c, err := gonet.DialContextTCP(ctx, s, Full(to.Addr(), to.Port()), Proto(to.Addr()))
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dial %v: %w", to, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// HTTPClient is a client whose connections go out of s, retrying for up
// to Wait while the server comes up.
func HTTPClient(s *stack.Stack) *http.Client {
	return &http.Client{Timeout: Wait, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return nil, err
			}
			return DialRetry(ctx, s, ap)
		},
	}}
}
