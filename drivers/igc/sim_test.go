package igc_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/igc"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

var (
	addrA = netip.MustParsePrefix("10.0.0.1/24")
	addrB = netip.MustParsePrefix("10.0.0.2/24")
)

// host is one simulated machine: an I225 model behind the VT-d model, our
// VT-d driver giving it a domain, igc bound by probe, gVisor on top.
type host struct {
	m     *sim.Machine
	model *mi225.NIC
	unit  *iommu.Unit
	nic   *igc.Device
	s     *netstack.Stack
}

func newHost(t *testing.T, end *wire.End, last byte, addr netip.Prefix, device uint16, nonCoherent bool) *host {
	t.Helper()
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: nonCoherent})
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	at := pci.Addr{Dev: 3}
	model, err := mi225.Plug(m, at, mi225.Options{Device: device, MAC: [6]byte{0x02, 0, 0, 0, 0, last}, DeferRx: true})
	if err != nil {
		t.Fatal(err)
	}
	model.Attach(end)
	unit, err := iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	res, err := probe.Bind(probe.Platform{
		Config: m.Bus,
		BAR:    func(f *pci.Function, bar int) (kernel.Regs, error) { return m.Bus.Regs(f.Addr, bar) },
		IOMMU:  unit,
		Memory: m.Mem,
		Clock:  m.Clock,
		IRQ:    func(f *pci.Function) kernel.Waiter { return m.IRQ(f.Addr) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	nics := res.NICs()
	if len(nics) != 1 {
		t.Fatalf("probe found %d NICs, want 1", len(nics))
	}
	d, ok := nics[0].(*igc.Device)
	if !ok {
		t.Fatalf("probe bound %T, want the igc driver", nics[0])
	}
	h := &host{m: m, model: model, unit: unit, nic: d}
	if addr.IsValid() {
		// No spinning: with DeferRx a frame lands when its queue's loop
		// re-arms the vector, which a loop polling the ring never does, so
		// a loop that spun would only let the packet buffer fill.
		ep := netstack.Options{Spin: -1}
		h.s, err = netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: d, Addrs: []netip.Prefix{addr}, Endpoint: ep})
		if err != nil {
			d.Close()
			t.Fatal(err)
		}
	}
	return h
}

func (h *host) stat(t *testing.T, name string) uint64 {
	t.Helper()
	for _, s := range h.nic.Stats() {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no stat %q", name)
	return 0
}

// close shuts the host down and checks the VT-d unit saw no fault and
// that nothing stayed mapped or pinned.
func (h *host) close(t *testing.T) {
	t.Helper()
	if h.s != nil {
		h.s.Close()
	} else if err := h.nic.Close(); err != nil {
		t.Error(err)
	}
	if f := h.unit.Faults(); len(f) != 0 {
		t.Errorf("VT-d faults: %v", f)
	}
	if c := h.model.Counters(); c.RxDMAFaults != 0 || c.TxDMAFaults != 0 {
		t.Errorf("model DMA faults: rx %d tx %d", c.RxDMAFaults, c.TxDMAFaults)
	}
	st := h.unit.Stats()
	if st.Faults != 0 || st.Maps != st.Unmaps || st.IOVAInUse != 0 {
		t.Errorf("after close: %d faults, %d maps, %d unmaps, %d IOVA bytes in use", st.Faults, st.Maps, st.Unmaps, st.IOVAInUse)
	}
	if ms := h.m.Mem.Stats(); ms.Pins != ms.Unpins || ms.Misuses != 0 {
		t.Errorf("after close: %d pins, %d unpins, DMA misuses %v", ms.Pins, ms.Unpins, h.m.Mem.Errors())
	}
}

func fullAddr(a netip.Addr, port uint16) tcpip.FullAddress {
	return tcpip.FullAddress{Addr: tcpip.AddrFromSlice(a.AsSlice()), Port: port}
}

// sendTCP moves n random bytes from client to server and compares hashes.
func sendTCP(t *testing.T, client, server *netstack.Stack, dst netip.Addr, n int) {
	t.Helper()
	if err := transferTCP(client, server, dst, n); err != nil {
		t.Fatal(err)
	}
}

// sendTCPConns runs conns connections at once from client to server, each
// moving n random bytes, so RSS spreads them over the queues.
func sendTCPConns(t *testing.T, client, server *netstack.Stack, dst netip.Addr, conns, n int) {
	t.Helper()
	errs := make(chan error, conns)
	for range conns {
		go func() { errs <- transferTCP(client, server, dst, n) }()
	}
	for i := range conns {
		if err := <-errs; err != nil {
			t.Errorf("connection %d of %d: %v", i+1, conns, err)
		}
	}
}

// transferTCP moves n random bytes over one connection from client to
// server and compares hashes.
func transferTCP(client, server *netstack.Stack, dst netip.Addr, n int) error {
	ln, err := gonet.ListenTCP(server.Stack, fullAddr(dst, 0), ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	type result struct {
		sum []byte
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		h := sha256.New()
		m, err := io.Copy(h, c)
		got <- result{h.Sum(nil), m, err}
	}()
	c, err := gonet.DialTCP(client.Stack, fullAddr(dst, port), ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	data := make([]byte, n)
	rand.Read(data)
	if _, err := c.Write(data); err != nil {
		c.Close()
		return fmt.Errorf("write: %w", err)
	}
	c.Close()
	select {
	case r := <-got:
		want := sha256.Sum256(data)
		if r.err != nil || r.n != int64(n) || !bytes.Equal(r.sum, want[:]) {
			return fmt.Errorf("TCP: received %d of %d bytes (err %v), hash match %v", r.n, n, r.err, bytes.Equal(r.sum, want[:]))
		}
	case <-time.After(60 * time.Second):
		return fmt.Errorf("TCP transfer of %d bytes timed out", n)
	}
	return nil
}

// checkQueuesSpread asserts that received frames came in on more than
// one queue, and that every queue that received went idle, re-armed its
// vector and was woken by an interrupt.
func checkQueuesSpread(t *testing.T, h *host) {
	t.Helper()
	busy := 0
	for q := range h.nic.Queues() {
		frames := h.stat(t, fmt.Sprintf("q%d_rx_frames", q))
		if frames == 0 {
			continue
		}
		busy++
		rearms, wakes := h.stat(t, fmt.Sprintf("q%d_irq_rearm", q)), h.stat(t, fmt.Sprintf("q%d_irq_wake", q))
		if rearms == 0 || wakes == 0 {
			t.Errorf("%s queue %d: %d frames with %d re-arms and %d interrupt wake-ups", h.nic.Name(), q, frames, rearms, wakes)
		}
	}
	if busy < 2 {
		t.Errorf("%s: frames arrived on %d queue(s), want RSS to use several", h.nic.Name(), busy)
	}
}

// udpRoundTrip sends one datagram of each size from a to b and checks
// that b's bound endpoint reads it back intact.
func udpRoundTrip(t *testing.T, a, b *netstack.Stack, src, dst netip.Addr, sizes ...int) {
	t.Helper()
	srv, err := gonet.DialUDP(b.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(dst.AsSlice()), Port: 9}, nil, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := gonet.DialUDP(a.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(src.AsSlice())}, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(dst.AsSlice()), Port: 9}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	buf := make([]byte, 65536)
	for _, n := range sizes {
		msg := make([]byte, n)
		rand.Read(msg)
		ok := false
		for try := 0; try < 5 && !ok; try++ { // the first may wait on ARP
			if _, err := cl.Write(msg); err != nil {
				t.Fatal(err)
			}
			srv.SetReadDeadline(time.Now().Add(time.Second))
			m, _, err := srv.ReadFrom(buf)
			ok = err == nil && bytes.Equal(buf[:m], msg)
		}
		if !ok {
			t.Fatalf("UDP datagram of %d bytes not received intact", n)
		}
	}
}

// udpSizes are payloads whose frames are small, at the build threshold of
// the current MTU, and (with the MTU one higher) one byte over it.
func udpSizes(mtu int) []int { return []int{1, 18, 200, 1000, mtu - 28} }

// tcpConns is how many TCP connections run at once each way: RSS spreads
// them, and the ACKs of the other direction, over the four queues.
const tcpConns = 4

// TestSimTrafficBuildAndConstruct runs UDP and TCP both ways between two
// I225 models with RSS on. The models defer receive DMA (DeferRx): a
// frame lands in its queue's ring when that queue's poll loop re-arms its
// interrupt vector before sleeping, or touches its ring registers, so
// descriptor writes and reads are ordered on one goroutine, as interrupts
// order them on real hardware, and the test runs under -race.
func TestSimTrafficBuildAndConstruct(t *testing.T) {
	size := 4 << 20
	if testing.Short() {
		size = 1 << 20
	}
	threshold := igc.MaxFrameBuild - 22
	for _, tc := range []struct {
		name        string
		ctl         string
		mtu         int
		want        igc.Layout
		nonCoherent bool
	}{
		{"build", "build auto", 1500, igc.Build, false},
		{"construct", "build off", 1500, igc.Construct, false},
		{"build-noncoherent", "build auto", 1500, igc.Build, true},
		{"construct-noncoherent", "build off", 1500, igc.Construct, true},
		{"threshold", "build auto", threshold, igc.Build, false},
		{"over-threshold", "build auto", threshold + 1, igc.Construct, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := wire.New(wire.Options{SpeedMbps: 2500})
			if err != nil {
				t.Fatal(err)
			}
			a := newHost(t, w.A(), 1, addrA, 0x15f3, tc.nonCoherent)
			defer a.close(t)
			b := newHost(t, w.B(), 2, addrB, 0x125c, tc.nonCoherent)
			defer b.close(t)
			for _, h := range []*host{a, b} {
				for _, c := range []string{tc.ctl, fmt.Sprintf("mtu %d", tc.mtu)} {
					if err := h.nic.Ctl(c); err != nil {
						t.Fatal(err)
					}
				}
				if l, _ := h.nic.Layout(0); l != tc.want {
					t.Fatalf("layout %v, want %v", l, tc.want)
				}
			}
			udpRoundTrip(t, a.s, b.s, addrA.Addr(), addrB.Addr(), udpSizes(tc.mtu)...)
			sendTCPConns(t, a.s, b.s, addrB.Addr(), tcpConns, size/tcpConns)
			sendTCPConns(t, b.s, a.s, addrA.Addr(), tcpConns, size/tcpConns)
			for _, h := range []*host{a, b} {
				checkQueuesSpread(t, h)
				built, constructed := h.stat(t, "rx_build"), h.stat(t, "rx_construct")
				if tc.want == igc.Build && (built == 0 || constructed != 0) || tc.want == igc.Construct && (built != 0 || constructed == 0) {
					t.Errorf("%s: %d built, %d constructed, want all %v", h.nic.Name(), built, constructed, tc.want)
				}
				if h.stat(t, "tx_tso") == 0 || h.stat(t, "tx_csum") == 0 {
					t.Errorf("%s: TSO %d, checksum offload %d: want both used", h.nic.Name(), h.stat(t, "tx_tso"), h.stat(t, "tx_csum"))
				}
				for _, s := range h.s.Endpoints[0].Stats() {
					if s.Name == "rx_csum_hw" && s.Value == 0 {
						t.Errorf("%s: no device-verified receive checksums", h.nic.Name())
					}
				}
				if h.stat(t, "good_packets_rx") == 0 || h.stat(t, "good_packets_tx") == 0 {
					t.Errorf("%s: device statistics read nothing", h.nic.Name())
				}
			}
		})
	}
}

func TestSimMTUChangeUnderTraffic(t *testing.T) {
	w, err := wire.New(wire.Options{SpeedMbps: 2500})
	if err != nil {
		t.Fatal(err)
	}
	a := newHost(t, w.A(), 1, addrA, 0x15f2, false)
	defer a.close(t)
	b := newHost(t, w.B(), 2, addrB, 0x125b, false)
	defer b.close(t)
	threshold := igc.MaxFrameBuild - 22
	for _, mtu := range []int{1500, threshold + 1, 2000, threshold, 1500, 576} {
		for _, h := range []*host{a, b} {
			if err := h.nic.Ctl(fmt.Sprintf("mtu %d", mtu)); err != nil {
				t.Fatal(err)
			}
		}
		udpRoundTrip(t, a.s, b.s, addrA.Addr(), addrB.Addr(), 1, mtu-28)
		sendTCP(t, a.s, b.s, addrB.Addr(), 256<<10)
	}
	if a.stat(t, "rx_build") == 0 || a.stat(t, "rx_construct") == 0 || a.stat(t, "rx_relayouts") < 4 {
		t.Errorf("build %d construct %d relayouts %d", a.stat(t, "rx_build"), a.stat(t, "rx_construct"), a.stat(t, "rx_relayouts"))
	}
}

func TestSimLinkSpeeds(t *testing.T) {
	for _, tc := range []struct {
		device uint16
		wire   int
		want   int
	}{{0x15f3, 2500, 2500}, {0x125c, 2500, 2500}, {0x15f3, 1000, 1000}, {0x15f3, 100, 100}, {0x15f3, 10, 10}, {0x15f7, 2500, 1000}} {
		t.Run(fmt.Sprintf("%04x@%d", tc.device, tc.wire), func(t *testing.T) {
			w, err := wire.New(wire.Options{SpeedMbps: tc.wire})
			if err != nil {
				t.Fatal(err)
			}
			h := newHost(t, w.A(), 1, netip.Prefix{}, tc.device, false)
			defer h.close(t)
			if l := h.nic.Link(); l != (nic.Link{Up: true, SpeedMbps: tc.want, FullDuplex: true}) {
				t.Fatalf("link %+v, want %d Mb/s full duplex", l, tc.want)
			}
		})
	}
}

func TestSimBlankNVM(t *testing.T) {
	for _, dev := range []uint16{0x15fd, 0x125f} {
		w, _ := wire.New(wire.Options{})
		h := newHost(t, w.A(), 1, netip.Prefix{}, dev, false)
		m := h.nic.MAC()
		if m[0]&2 == 0 || m[0]&1 != 0 {
			t.Errorf("%04x: mac %x is not a locally administered unicast address", dev, m)
		}
		h.close(t)
	}
}

func TestSimUnknownDeviceRefused(t *testing.T) {
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU()})
	cs := sim.NewConfigSpace(igc.VendorIntel, 0x15f4, 0x020000, 0)
	cs.SetBAR(0, pci.BARMem64, 128<<10, false)
	f := &pci.Function{Vendor: igc.VendorIntel, Device: 0x15f4}
	if _, err := igc.Probe(&nic.Device{Name: "ether0", Func: f, Regs: m.VTdRegs(), DMA: iommu.Passthrough(m.Mem), Clock: m.Clock}); err == nil {
		t.Fatal("probe of 8086:15f4 succeeded")
	} else if !bytes.Contains([]byte(err.Error()), []byte("8086:15f4")) {
		t.Fatalf("error %q does not name the id", err)
	}
}
