package igb_test

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// TCP between two machines: several connections spread over the RSS
// queues, every byte checked, no fault, nothing left mapped. The models
// defer receive DMA (DeferRx): a frame lands in its queue's ring when
// that queue's poll loop re-arms its interrupt vector before sleeping, so
// descriptor writes and reads are ordered on one goroutine, as interrupts
// order them on real hardware, and the test runs under -race.
func TestSimTCPOverRSSQueues(t *testing.T) {
	for _, nc := range []bool{false, true} {
		t.Run(fmt.Sprintf("noncoherent=%v", nc), func(t *testing.T) {
			w, err := wire.New(wire.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := newDeferredHost(t, w.A(), 1, nc)
			b := newDeferredHost(t, w.B(), 2, nc)
			sa, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: a.nic, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24")}})
			if err != nil {
				t.Fatal(err)
			}
			sb, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: b.nic, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.2/24")}})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := gonet.ListenTCP(sa.Stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), Port: 5000}, ipv4.ProtocolNumber)
			if err != nil {
				t.Fatal(err)
			}
			const conns, size = 8, 256 << 10
			pattern := func(k, i int) byte { return byte(k*31 + i*7 + i>>9) }
			var wg sync.WaitGroup
			errs := make(chan error, 2*conns)
			wg.Add(1)
			go func() { // server: read each connection whole and check it
				defer wg.Done()
				for c := 0; c < conns; c++ {
					conn, err := ln.Accept()
					if err != nil {
						errs <- err
						return
					}
					wg.Add(1)
					go func(conn net.Conn) {
						defer wg.Done()
						defer conn.Close()
						var hdr [1]byte
						if _, err := io.ReadFull(conn, hdr[:]); err != nil {
							errs <- err
							return
						}
						k := int(hdr[0])
						got, err := io.ReadAll(conn)
						if err != nil {
							errs <- err
							return
						}
						if len(got) != size {
							errs <- fmt.Errorf("connection %d: %d bytes", k, len(got))
							return
						}
						for i, v := range got {
							if v != pattern(k, i) {
								errs <- fmt.Errorf("connection %d: byte %d is %d", k, i, v)
								return
							}
						}
					}(conn)
				}
			}()
			for k := 0; k < conns; k++ {
				wg.Add(1)
				go func(k int) {
					defer wg.Done()
					conn, err := gonet.DialTCP(sb.Stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), Port: 5000}, ipv4.ProtocolNumber)
					if err != nil {
						errs <- err
						return
					}
					buf := make([]byte, size+1)
					buf[0] = byte(k)
					for i := 0; i < size; i++ {
						buf[1+i] = pattern(k, i)
					}
					if _, err := conn.Write(buf); err != nil {
						errs <- err
					}
					conn.Close()
				}(k)
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("transfers did not finish")
			}
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if rx := a.stat(t, "rx_bytes"); rx < conns*size {
				t.Errorf("receiver counted %d bytes, sent %d", rx, conns*size)
			}
			busy := 0
			for q := 0; q < len(a.nic.Queues()); q++ {
				if a.stat(t, fmt.Sprintf("q%d_rx_frames", q)) > 0 {
					busy++
				}
			}
			if busy < 2 {
				t.Errorf("frames arrived on %d RSS queue(s), want several", busy)
			}
			for q := 0; q < len(a.nic.Queues()); q++ {
				frames := a.stat(t, fmt.Sprintf("q%d_rx_frames", q))
				rearms, wakes := a.stat(t, fmt.Sprintf("q%d_irq_rearm", q)), a.stat(t, fmt.Sprintf("q%d_irq_wake", q))
				if frames > 0 && (rearms == 0 || wakes == 0) {
					t.Errorf("queue %d: %d frames with %d re-arms and %d interrupt wake-ups", q, frames, rearms, wakes)
				}
			}
			if a.stat(t, "tx_tso")+b.stat(t, "tx_tso") == 0 {
				t.Error("no TSO packet sent")
			}
			ln.Close()
			closeStack(sa)
			closeStack(sb)
			a.checkClosed(t)
			b.checkClosed(t)
		})
	}
}

func closeStack(s *netstack.Stack) {
	for _, ep := range s.Endpoints {
		ep.Attach(nil) // stop the poll loops before RemoveNIC takes the stack lock
	}
	s.Close()
}
