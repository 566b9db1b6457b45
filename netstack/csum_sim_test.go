package netstack_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/ether9/ether9/internal/transfer"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestSimRxCsum sends, from the wire, good and corrupted TCP and UDP
// frames over IPv4 and IPv6 to a simulated host of each driver: the
// stack delivers the good ones (each UDP datagram to its socket, each TCP
// SYN to its listener) and drops the bad ones, counted in rx_csum_bad. A
// driver that marked a corrupted frame verified (CsumOK: TCPCS or L4I
// read without TCPE, L4E or IPE) would have it skip the endpoint's check
// and reach the socket, as gVisor trusts a validated packet.
func TestSimRxCsum(t *testing.T) {
	// The UDP sockets and the TCP listeners share a port number: the
	// cases send TCP and UDP to the same one.
	const port = 5300
	peerMAC := [6]byte{0x02, 0, 0, 0, 0, 1}
	for _, driver := range []string{"e1000e", "igb", "igc"} {
		t.Run(driver, func(t *testing.T) {
			w, err := wire.New(wire.Options{})
			if err != nil {
				t.Fatal(err)
			}
			h := newSimHost(t, driver, w.A(), 2, []netip.Prefix{addrB, addrB6}, false, 0, netstack.Options{})
			defer func() {
				h.s.Close()
				h.checkClosed(t)
			}()
			socks := map[bool]*gonet.UDPConn{}
			for _, a := range []netip.Addr{addrB.Addr(), addrB6.Addr()} {
				c, err := gonet.DialUDP(h.s.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(a.AsSlice()), Port: port}, nil, transfer.Proto(a))
				if err != nil {
					t.Fatalf("udp socket on %v: %v", a, err)
				}
				defer c.Close()
				socks[a.Is6()] = c
				ln, err := gonet.ListenTCP(h.s.Stack, transfer.FullAddr(a, port), transfer.Proto(a))
				if err != nil {
					t.Fatalf("listen on %v: %v", a, err)
				}
				defer ln.Close()
			}
			packet := func(src, dst netip.Addr) nicmodeltest.Packet {
				return nicmodeltest.Packet{
					Dst: h.model.mac, Src: peerMAC,
					SrcIP: tcpip.AddrFromSlice(src.AsSlice()), DstIP: tcpip.AddrFromSlice(dst.AsSlice()),
					SrcPort: 40000, DstPort: port, Flags: header.TCPFlagSyn,
				}
			}
			v4, v6 := packet(addrA.Addr(), addrB.Addr()), packet(addrA6.Addr(), addrB6.Addr())
			tcpValid := h.s.Stats().TCP.ValidSegmentsReceived
			type counts struct{ hw, sw, bad, tcp uint64 }
			now := func() counts {
				return counts{stat(t, h.ep, "rx_csum_hw"), stat(t, h.ep, "rx_csum_sw"), stat(t, h.ep, "rx_csum_bad"), tcpValid.Value()}
			}
			// waitFor fails, with the counters that tell how far the frame
			// got, if cond has not held within 5 s.
			waitFor := func(what string, cond func(counts) bool) counts {
				t.Helper()
				deadline := time.Now().Add(5 * time.Second)
				for {
					c := now()
					if cond(c) {
						return c
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: not within 5s; rx_csum_hw %d rx_csum_sw %d rx_csum_bad %d, TCP segments valid %d; NIC %v", what, c.hw, c.sw, c.bad, c.tcp, h.ep.NIC().Stats())
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
			read := func(what string, v6 bool, want string) {
				t.Helper()
				c := socks[v6]
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 256)
				n, _, err := c.ReadFrom(buf)
				if err != nil || string(buf[:n]) != want {
					t.Fatalf("%s: the socket read %q, %v; want %q (a corrupted datagram delivered reads here in place of the good one)", what, buf[:n], err, want)
				}
			}

			cases := nicmodeltest.CsumCases(v4, v6)
			var bad uint64
			for _, c := range cases {
				before := now()
				w.B().Send(c.Frame)
				// Every frame takes the device's word or the endpoint's check.
				got := waitFor(c.Name+": frame through the endpoint", func(n counts) bool { return n.hw+n.sw > before.hw+before.sw })
				if !c.Good {
					bad++
					if got.hw != before.hw {
						// Go on: the socket shows where it went.
						t.Errorf("%s: delivered as device-verified (CsumOK), unchecked", c.Name)
						continue
					}
					waitFor(c.Name+": counted in rx_csum_bad", func(n counts) bool { return n.bad == before.bad+1 })
					continue
				}
				if c.UDP {
					read(c.Name, c.V6, string(c.Payload))
					continue
				}
				waitFor(c.Name+": a valid segment to the listener", func(n counts) bool { return n.tcp == before.tcp+1 })
			}
			// A corrupted datagram after the last good one to its socket
			// would read here in place of the end mark.
			for _, p := range []nicmodeltest.Packet{v4, v6} {
				p.V6, p.Payload, p.Pad = p.DstIP.Len() == 16, []byte("end"), true
				w.B().Send(p.UDP())
				read(fmt.Sprintf("end mark (v6 %v)", p.V6), p.V6, "end")
			}
			if c := now(); c.bad != bad || c.tcp != 2 {
				t.Errorf("rx_csum_bad %d for %d corrupted frames; %d valid TCP segments for the 2 good ones", c.bad, bad, c.tcp)
			}
		})
	}
}
