package netstack_test

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/netstack"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

const wireMaxFrame = 1500 + 14

func TestTCPTransfer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tso     bool
		v6      bool
		wantGSO bool
	}{
		{"ipv4 tso", true, false, true},
		{"ipv4 no-tso", false, false, false},
		{"ipv6 tso", true, true, true},
		{"ipv6 no-tso", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakePair(t, netstack.Options{})
			for _, n := range []*fakeNIC{p.a, p.b} {
				f := n.Features()
				f.TSOv4, f.TSOv6 = tc.tso, tc.tso
				n.setFeatures(f)
			}
			dst := addrB.Addr()
			if tc.v6 {
				dst = addrB6.Addr()
			}
			transferTCP(t, p.sa, p.sb, dst, 1<<20, nil)

			_, wireMax, gso, _, _ := p.a.counters()
			if wireMax > wireMaxFrame {
				t.Errorf("largest frame on the wire %d bytes, above %d", wireMax, wireMaxFrame)
			}
			epGSO := stat(t, p.sa.Endpoints[0], "tx_gso")
			if tc.wantGSO && (gso == 0 || epGSO == 0) {
				t.Errorf("TSO on: driver got %d GSO packets, endpoint counted %d; want some", gso, epGSO)
			}
			if !tc.wantGSO && (gso != 0 || epGSO != 0) {
				t.Errorf("TSO off: driver got %d GSO packets, endpoint counted %d; want none", gso, epGSO)
			}
			if v := stat(t, p.sa.Endpoints[0], "tx_bytes"); v < 1<<20 {
				t.Errorf("sender counted %d bytes sent for 1 MiB", v)
			}
			if v := stat(t, p.sb.Endpoints[0], "rx_csum_hw"); v == 0 {
				t.Errorf("receiver saw no device-verified checksums")
			}
		})
	}
}

func TestCapabilitiesFollowFeatures(t *testing.T) {
	n := newFakeNIC("ether0", 1)
	ep, err := netstack.New(n, netstack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	for _, tc := range []struct {
		feat    nic.Features
		rx      bool
		gso     stack.SupportedGSO
		maxSize uint32
	}{
		{nic.Features{RxChecksum: true, TSOv4: true, MaxGSO: 32 << 10}, true, stack.HostGSOSupported, 32 << 10},
		{nic.Features{TSOv6: true, MaxGSO: 1 << 20}, false, stack.HostGSOSupported, 1<<16 - 1},
		{nic.Features{RxChecksum: true}, true, stack.GVisorGSOSupported, stack.GVisorGSOMaxSize},
	} {
		n.setFeatures(tc.feat)
		caps := ep.Capabilities()
		if got := caps&stack.CapabilityRXChecksumOffload != 0; got != tc.rx {
			t.Errorf("%+v: RX checksum offload %v, want %v", tc.feat, got, tc.rx)
		}
		if caps&stack.CapabilityResolutionRequired == 0 {
			t.Errorf("%+v: ARP resolution not required", tc.feat)
		}
		if caps&stack.CapabilityTXChecksumOffload != 0 {
			t.Errorf("%+v: TX checksum offload advertised", tc.feat)
		}
		if got := ep.SupportedGSO(); got != tc.gso {
			t.Errorf("%+v: SupportedGSO %v, want %v", tc.feat, got, tc.gso)
		}
		if got := ep.GSOMaxSize(); got != tc.maxSize {
			t.Errorf("%+v: GSOMaxSize %d, want %d", tc.feat, got, tc.maxSize)
		}
	}
	if ep.MTU() != 1500 || ep.MaxHeaderLength() != 14 {
		t.Errorf("MTU %d header %d, want 1500 and 14", ep.MTU(), ep.MaxHeaderLength())
	}
	ep.SetMTU(9000)
	if n.MTU() != 9000 {
		t.Errorf("SetMTU did not reach the driver: %d", n.MTU())
	}
	ep.SetMTU(1) // refused by the driver: unchanged
	if ep.MTU() != 9000 {
		t.Errorf("refused SetMTU changed the MTU to %d", ep.MTU())
	}
}

// A connection set up while TSO was on keeps sending GSO packets after TSO
// goes off; the driver segments them, nothing oversized reaches the wire,
// and connections made afterwards no longer use GSO.
func TestFeaturesChangeMidStream(t *testing.T) {
	p := newFakePair(t, netstack.Options{})
	turnOff := func() {
		f := p.a.Features()
		f.TSOv4, f.TSOv6, f.RxChecksum = false, false, false
		p.a.setFeatures(f)
		p.b.setFeatures(f)
	}
	transferTCP(t, p.sa, p.sb, addrB.Addr(), 1<<20, turnOff)
	_, wireMax, _, gsoNoTSO, _ := p.a.counters()
	if gsoNoTSO == 0 {
		t.Errorf("no GSO packet reached the driver after TSO went off; the test did not cover the switch")
	}
	if wireMax > wireMaxFrame {
		t.Errorf("largest frame on the wire %d, above %d", wireMax, wireMaxFrame)
	}
	if p.sa.Endpoints[0].SupportedGSO() != stack.GVisorGSOSupported {
		t.Errorf("endpoint still offers host GSO with TSO off")
	}
	_, _, gsoBefore, _, _ := p.a.counters()
	swBefore := stat(t, p.sb.Endpoints[0], "rx_csum_sw")
	transferTCP(t, p.sa, p.sb, addrB.Addr(), 256<<10, nil)
	if _, _, gsoAfter, _, _ := p.a.counters(); gsoAfter != gsoBefore {
		t.Errorf("new connection sent %d GSO packets with TSO off", gsoAfter-gsoBefore)
	}
	if stat(t, p.sb.Endpoints[0], "rx_csum_sw") != swBefore {
		t.Errorf("checksums verified in the endpoint while RX offload is off (gVisor should do it)")
	}
}

func TestUDPICMPARP(t *testing.T) {
	p := newFakePair(t, netstack.Options{})
	if err := ping(t, p.sa, addrB.Addr()); err != nil {
		t.Fatalf("ping v4: %v", err)
	}
	if err := ping(t, p.sb, addrA6.Addr()); err != nil {
		t.Fatalf("ping v6: %v", err)
	}
	// ARP filled the neighbour table with the peer's real MAC.
	neigh, terr := p.sa.Neighbors(netstack.NICID(0), 0x0800)
	if terr != nil {
		t.Fatalf("neighbours: %s", terr)
	}
	found := false
	for _, n := range neigh {
		if n.Addr == tcpip.AddrFromSlice(addrB.Addr().AsSlice()) {
			mac := p.b.MAC()
			found = n.LinkAddr == tcpip.LinkAddress(mac[:])
		}
	}
	if !found {
		t.Errorf("no ARP entry for %v with MAC %x: %+v", addrB.Addr(), p.b.MAC(), neigh)
	}
	for _, size := range []int{1, 512, 1472, 4000} { // 4000 B goes in IP fragments
		udpEcho(t, p.sa, p.sb, addrA.Addr(), addrB.Addr(), size)
		udpEcho(t, p.sb, p.sa, addrB6.Addr(), addrA6.Addr(), size)
	}
}

// Frames the device did not verify are checked by the endpoint while RX
// checksum offload is advertised: a corrupt one is dropped, a good one
// delivered.
func TestRXChecksumVerifiedInSoftware(t *testing.T) {
	p := newFakePair(t, netstack.Options{})
	srv, err := gonet.DialUDP(p.sb.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(addrB.Addr().AsSlice()), Port: 4000}, nil, 0x0800)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ep := p.sb.Endpoints[0]
	bad := udpFrame(p.a.MAC(), p.b.MAC(), addrA.Addr(), addrB.Addr(), 4000, []byte("corrupted"), true)
	good := udpFrame(p.a.MAC(), p.b.MAC(), addrA.Addr(), addrB.Addr(), 4000, []byte("intact"), false)
	injectUnverified(p.b, bad)
	injectUnverified(p.b, good)
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	n, _, err := srv.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "intact" {
		t.Fatalf("read %q, %v; want the intact datagram first", buf[:n], err)
	}
	if got := stat(t, ep, "rx_csum_bad"); got != 1 {
		t.Errorf("rx_csum_bad %d, want 1", got)
	}
}

// A device that vouches for a corrupted frame (CsumOK) has it trusted,
// unless the checksum audit is on: then it is counted and dropped, and
// the good frames pass.
func TestCsumAuditCatchesVouchedDamage(t *testing.T) {
	p := newFakePair(t, netstack.Options{})
	srv, err := gonet.DialUDP(p.sb.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(addrB.Addr().AsSlice()), Port: 4002}, nil, 0x0800)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ep := p.sb.Endpoints[0]
	read := func() string {
		t.Helper()
		srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 100)
		n, _, err := srv.ReadFrom(buf)
		if err != nil {
			t.Fatalf("read: %v (rx_csum_hw_wrong %d)", err, stat(t, ep, "rx_csum_hw_wrong"))
		}
		return string(buf[:n])
	}
	frame := func(payload string, corrupt bool) []byte {
		return udpFrame(p.a.MAC(), p.b.MAC(), addrA.Addr(), addrB.Addr(), 4002, []byte(payload), corrupt)
	}
	// udpFrame's corruption changes the payload's first byte after the
	// checksum: off, the audit lets the damage through to the reader.
	injectVouched(p.b, frame("damaged, trusted", true))
	if got := read(); got == "damaged, trusted" || !strings.HasSuffix(got, "amaged, trusted") {
		t.Fatalf("audit off: read %q, want the damaged datagram", got)
	}
	if err := ep.Ctl("csum audit on"); err != nil || !ep.CsumAudit() {
		t.Fatalf("csum audit on: %v", err)
	}
	if !strings.Contains(ep.CtlState(), "csum audit on\n") {
		t.Errorf("ctl state %q does not say the audit is on", ep.CtlState())
	}
	injectVouched(p.b, frame("damaged, caught", true))
	injectVouched(p.b, frame("intact", false))
	if got := read(); got != "intact" {
		t.Fatalf("audit on: read %q, want the intact datagram first", got)
	}
	if got := stat(t, ep, "rx_csum_hw_wrong"); got != 1 {
		t.Errorf("rx_csum_hw_wrong %d, want 1", got)
	}
	for _, bad := range []string{"csum", "csum audit", "csum audit maybe", "csum check on", "gro"} {
		if err := ep.Ctl(bad); err == nil {
			t.Errorf("ctl %q accepted", bad)
		}
	}
	if !ep.CsumAudit() {
		t.Error("a refused ctl turned the audit off")
	}
}

// injectVouched delivers a frame with CsumOK true, as a device that
// verified its checksums does, whatever they are.
func injectVouched(n *fakeNIC, frame []byte) {
	n.q.vouched <- frame
	n.q.signal()
}

// injectUnverified delivers a frame with CsumOK false, as a device does
// for frames it did not check.
func injectUnverified(n *fakeNIC, frame []byte) {
	n.q.unverified <- frame
	n.q.signal()
}

func TestPollBudget(t *testing.T) {
	p := newFakePair(t, netstack.Options{Budget: 8})
	srv, err := gonet.DialUDP(p.sb.Stack, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(addrB.Addr().AsSlice()), Port: 4001}, nil, 0x0800)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Resolve ARP both ways first so injected frames are all that flows.
	if err := ping(t, p.sa, addrB.Addr()); err != nil {
		t.Fatal(err)
	}
	const count = 500
	p.b.q.pause()
	for i := 0; i < count; i++ {
		p.b.inject(udpFrame(p.a.MAC(), p.b.MAC(), addrA.Addr(), addrB.Addr(), 4001, []byte{byte(i), byte(i >> 8)}, false))
	}
	ep := p.sb.Endpoints[0]
	before := stat(t, ep, "poll_budget_exhausted")
	p.b.q.resume()
	buf := make([]byte, 16)
	for i := 0; i < count; i++ {
		srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := srv.ReadFrom(buf)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if n != 2 || int(buf[0])|int(buf[1])<<8 != i {
			t.Fatalf("datagram %d out of order: % x", i, buf[:n])
		}
	}
	if got := stat(t, ep, "poll_budget_exhausted") - before; got < count/8-1 {
		t.Errorf("budget of 8 exhausted %d times for %d queued frames, want at least %d", got, count, count/8-1)
	}
}

// A ring that never completes: WritePackets gives up after TxTimeout,
// counts the drops, and the stack recovers once completions resume.
func TestTXBackPressure(t *testing.T) {
	p := newFakePair(t, netstack.Options{TxTimeout: 20 * time.Millisecond})
	if err := ping(t, p.sa, addrB.Addr()); err != nil {
		t.Fatal(err)
	}
	p.a.mu.Lock()
	p.a.ringLen = 4
	p.a.stall = true
	p.a.mu.Unlock()
	ep := p.sa.Endpoints[0]

	done := make(chan struct{})
	go func() {
		defer close(done)
		transferTCP(t, p.sa, p.sb, addrB.Addr(), 512<<10, func() {
			eventually(t, "tx drops", func() bool { return stat(t, ep, "tx_dropped") > 0 })
			p.a.mu.Lock()
			p.a.stall = false
			p.a.mu.Unlock()
		})
	}()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("transfer blocked")
	}
	if stat(t, ep, "tx_ring_full") == 0 {
		t.Errorf("ring of 4 never reported full")
	}
}

func TestLinkDownUp(t *testing.T) {
	var mu sync.Mutex
	var seen []bool
	p := newFakePair(t, netstack.Options{OnLink: func(l nic.Link) {
		mu.Lock()
		seen = append(seen, l.Up)
		mu.Unlock()
	}})
	ep := p.sa.Endpoints[0]
	transferTCP(t, p.sa, p.sb, addrB.Addr(), 1<<20, func() {
		p.a.setLink(nic.Link{})
		eventually(t, "link down", func() bool { return !ep.Link().Up })
		if err := ping(t, p.sa, addrB.Addr()); err == nil {
			t.Errorf("ping worked with the link down")
		}
		if stat(t, ep, "tx_link_down") == 0 {
			t.Errorf("no transmit refused while the link was down")
		}
		p.a.setLink(nic.Link{Up: true, SpeedMbps: 100, FullDuplex: true})
		eventually(t, "link up", func() bool { return ep.Link().Up })
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 || seen[0] || !seen[len(seen)-1] {
		t.Errorf("link callbacks %v, want down then up", seen)
	}
	if got := stat(t, ep, "link_changes"); got < 2 {
		t.Errorf("link_changes %d, want 2", got)
	}
}

// Close while both directions carry traffic: no panic, no race, the poll
// loops end, the drivers are closed and later writes are refused.
func TestCloseWhileTrafficFlows(t *testing.T) {
	a, b := newFakeNIC("ether0", 1), newFakeNIC("ether0", 2)
	crossWire(a, b)
	sa, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: a, Addrs: []netip.Prefix{addrA}})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: b, Addrs: []netip.Prefix{addrB}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(port uint16) {
			defer wg.Done()
			c, err := gonet.DialUDP(sa.Stack, nil, &tcpip.FullAddress{Addr: tcpip.AddrFromSlice(addrB.Addr().AsSlice()), Port: port}, 0x0800)
			if err != nil {
				return
			}
			defer c.Close()
			msg := make([]byte, 1000)
			for j := 0; j < 2000; j++ {
				if _, err := c.Write(msg); err != nil {
					return
				}
			}
		}(uint16(5000 + i))
		wg.Add(1)
		go func() { // traffic towards the closing side
			defer wg.Done()
			for j := 0; j < 2000; j++ {
				b.q.Transmit([]*nic.TxPacket{{Data: buffer.MakeWithData(udpFrame(b.MAC(), a.MAC(), addrB.Addr(), addrA.Addr(), 9, make([]byte, 100), false))}})
				b.q.Reclaim()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	ep := sa.Endpoints[0]
	within(t, 30*time.Second, "stack close under traffic", sa.Close)
	within(t, 30*time.Second, "senders after close", wg.Wait)
	if !a.isClosed() {
		t.Errorf("driver not closed by the endpoint")
	}
	var pkts stack.PacketBufferList
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 14, Payload: buffer.MakeWithData(make([]byte, 64))})
	pkts.PushBack(pkt)
	if _, terr := ep.WritePackets(pkts); terr == nil {
		t.Errorf("WritePackets after Close succeeded")
	}
	pkt.DecRef()
	within(t, 10*time.Second, "endpoint Wait after Close", ep.Wait)
}

// countingDispatcher is a stack that only counts what reaches it.
type countingDispatcher struct {
	mu     sync.Mutex
	frames int
	types  map[tcpip.NetworkProtocolNumber]int
}

func (d *countingDispatcher) DeliverNetworkPacket(p tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.frames++
	if d.types == nil {
		d.types = make(map[tcpip.NetworkProtocolNumber]int)
	}
	d.types[p]++
}
func (d *countingDispatcher) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// With Manual set no loop runs: frames wait until the caller polls, and
// Poll delivers at most its budget.
func TestManualPoll(t *testing.T) {
	n := newFakeNIC("ether0", 1)
	ep, err := netstack.New(n, netstack.Options{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	var d countingDispatcher
	ep.Attach(&d)
	for i := 0; i < 10; i++ {
		n.inject(udpFrame([6]byte{2, 0, 0, 0, 0, 9}, n.MAC(), addrB.Addr(), addrA.Addr(), 9, []byte{byte(i)}, false))
	}
	n.inject([]byte{1, 2, 3}) // a runt
	time.Sleep(10 * time.Millisecond)
	if d.frames != 0 {
		t.Fatalf("%d frames delivered with no Poll", d.frames)
	}
	if got, err := ep.Poll(0, 4); err != nil || got != 4 || d.frames != 4 {
		t.Fatalf("Poll(0, 4) = %d, %v; %d delivered", got, err, d.frames)
	}
	if got, _ := ep.Poll(0, 64); got != 7 || d.frames != 10 || d.types[0x0800] != 10 {
		t.Fatalf("second poll took %d, delivered %d (%v)", got, d.frames, d.types)
	}
	if stat(t, ep, "rx_runts") != 1 {
		t.Errorf("runt not counted")
	}
	if _, err := ep.Poll(1, 4); err == nil {
		t.Errorf("Poll of queue 1 of 1 accepted")
	}
	if _, err := ep.Poll(0, 0); err == nil {
		t.Errorf("Poll with budget 0 accepted")
	}
}

func TestNewRejectsBadDrivers(t *testing.T) {
	if _, err := netstack.New(nil, netstack.Options{}); err == nil {
		t.Errorf("nil NIC accepted")
	}
	if _, err := netstack.New(noQueues{newFakeNIC("ether9", 3)}, netstack.Options{}); err == nil {
		t.Errorf("NIC without queues accepted")
	}
}

type noQueues struct{ *fakeNIC }

func (noQueues) Queues() []nic.Queue { return nil }

// A panic in the driver's poll is caught, logged with its stack and
// counted, and the loop goes on: PID 1 keeps its network.
func TestPollPanicRecovered(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	p := newFakePair(t, netstack.Options{Logf: func(f string, args ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(f, args...))
		mu.Unlock()
	}})
	p.b.q.panicNext.Store(true)
	p.b.q.signal()
	ep := p.sb.Endpoints[0]
	eventually(t, "the panic", func() bool { return stat(t, ep, "poll_panics") == 1 })
	if err := ping(t, p.sa, addrB.Addr()); err != nil {
		t.Fatalf("after the panic: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, l := range logs {
		found = found || strings.Contains(l, "injected fault") && strings.Contains(l, "goroutine")
	}
	if !found {
		t.Errorf("panic not logged with its stack: %q", logs)
	}
}

// A packet the driver refuses is dropped alone and counted; the rest of the
// batch and later traffic go through.
func TestTransmitRefusal(t *testing.T) {
	p := newFakePair(t, netstack.Options{})
	if err := ping(t, p.sa, addrB.Addr()); err != nil {
		t.Fatal(err)
	}
	ep := p.sa.Endpoints[0]
	p.a.q.refuseNext.Store(true)
	if err := ping(t, p.sa, addrB.Addr()); err != nil { // the first echo is refused, a retry gets through
		t.Fatal(err)
	}
	if got := stat(t, ep, "tx_errors"); got != 1 {
		t.Errorf("tx_errors %d, want 1", got)
	}
	if got := stat(t, ep, "tx_dropped"); got != 1 {
		t.Errorf("tx_dropped %d, want 1", got)
	}
}

// lockingDispatcher takes mu for every frame, as gVisor's stack takes its
// lock when a received frame makes it look up a route for a reply.
type lockingDispatcher struct {
	mu      *sync.RWMutex
	entered chan struct{}
	once    sync.Once
}

func (d *lockingDispatcher) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {
	d.once.Do(func() { close(d.entered) })
	d.mu.RLock()
	d.mu.RUnlock()
}
func (d *lockingDispatcher) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// gVisor's RemoveNIC calls Attach(nil) holding the lock a delivering poll
// loop may be waiting for: Attach(nil) must return without waiting for the
// loop, and Close (called with no lock held) then ends it and the driver.
func TestDetachWhileDeliveryWaitsForStackLock(t *testing.T) {
	n := newFakeNIC("ether0", 1)
	ep, err := netstack.New(n, netstack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stackMu sync.RWMutex
	d := &lockingDispatcher{mu: &stackMu, entered: make(chan struct{})}
	stackMu.Lock()
	ep.Attach(d)
	n.inject(udpFrame([6]byte{2, 0, 0, 0, 0, 9}, n.MAC(), addrB.Addr(), addrA.Addr(), 9, []byte{1}, false))
	select {
	case <-d.entered:
	case <-time.After(10 * time.Second):
		stackMu.Unlock()
		t.Fatal("frame never delivered")
	}
	detached := make(chan struct{})
	go func() {
		ep.Attach(nil) // the "stack lock" is held, as in RemoveNIC
		close(detached)
	}()
	select {
	case <-detached:
	case <-time.After(10 * time.Second):
		stackMu.Unlock()
		t.Fatal("Attach(nil) waited for a poll loop blocked on the caller's lock")
	}
	stackMu.Unlock()
	within(t, 10*time.Second, "Close", ep.Close)
	within(t, 10*time.Second, "Wait", ep.Wait)
	if !n.isClosed() {
		t.Errorf("driver not closed")
	}
	if ep.IsAttached() {
		t.Errorf("still attached after Close")
	}
}

// A poll loop that never comes back from the stack cannot hold Close
// forever: Close gives up after CloseTimeout and the driver is closed when
// the loop ends.
func TestCloseIsBounded(t *testing.T) {
	n := newFakeNIC("ether0", 1)
	ep, err := netstack.New(n, netstack.Options{CloseTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var stackMu sync.RWMutex
	d := &lockingDispatcher{mu: &stackMu, entered: make(chan struct{})}
	stackMu.Lock()
	ep.Attach(d)
	n.inject(udpFrame([6]byte{2, 0, 0, 0, 0, 9}, n.MAC(), addrB.Addr(), addrA.Addr(), 9, []byte{1}, false))
	select {
	case <-d.entered:
	case <-time.After(10 * time.Second):
		stackMu.Unlock()
		t.Fatal("frame never delivered")
	}
	closed := make(chan struct{})
	go func() {
		ep.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		stackMu.Unlock()
		t.Fatal("Close did not return while a poll loop was stuck")
	}
	if n.isClosed() {
		t.Errorf("driver closed under a running poll loop")
	}
	if stat(t, ep, "close_stuck") != 1 {
		t.Errorf("close_stuck = %d, want 1", stat(t, ep, "close_stuck"))
	}
	stackMu.Unlock()
	within(t, 10*time.Second, "Wait", ep.Wait)
	eventually(t, "driver closed after the loop ended", n.isClosed)
}

// TestPollLoopSpinsOnlyAfterTraffic: a queue that just delivered frames
// polls on without waiting for Spin, and a queue with no traffic never
// spins, only waits.
func TestPollLoopSpinsOnlyAfterTraffic(t *testing.T) {
	n := newFakeNIC("ether0", 1)
	ep, err := netstack.New(n, netstack.Options{Spin: 20 * time.Millisecond, MaxWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	var d countingDispatcher
	ep.Attach(&d)
	// The loop starts as after traffic; let that spin end.
	time.Sleep(60 * time.Millisecond)
	spins, waits := stat(t, ep, "spins"), stat(t, ep, "idle_waits")
	time.Sleep(60 * time.Millisecond)
	if got := stat(t, ep, "spins") - spins; got != 0 {
		t.Errorf("an idle queue spun %d times", got)
	}
	if stat(t, ep, "idle_waits") == waits {
		t.Errorf("an idle queue did not wait")
	}
	polls, waits := stat(t, ep, "polls"), stat(t, ep, "idle_waits")
	n.inject(udpFrame([6]byte{2, 0, 0, 0, 0, 9}, n.MAC(), addrB.Addr(), addrA.Addr(), 9, []byte{1}, false))
	eventually(t, "the frame delivered, the loop spinning after it and then waiting again", func() bool {
		return stat(t, ep, "rx_packets") == 1 && stat(t, ep, "spins") > spins && stat(t, ep, "idle_waits") > waits
	})
	// The spin asked RxReady, not Poll. Besides one poll after each wait,
	// there were the poll that took the frame, the empty one that started
	// the spin and the one that ended it.
	dp := stat(t, ep, "polls") - polls
	dw := stat(t, ep, "idle_waits") - waits
	if dp > dw+3 {
		t.Errorf("%d polls around one frame, its spin and %d waits; want at most %d", dp, dw, dw+3)
	}
}

// OnWork follows traffic: a ping makes the poll loops that received
// frames call it.
func TestOnWork(t *testing.T) {
	var calls atomic.Uint64
	p := newFakePair(t, netstack.Options{OnWork: func() { calls.Add(1) }})
	if err := ping(t, p.sa, addrB.Addr()); err != nil {
		t.Fatal(err)
	}
	if calls.Load() == 0 {
		t.Fatalf("a ping answered and OnWork never called (polls %d)", stat(t, p.sa.Endpoints[0], "polls"))
	}
}

// The sender reclaims what the device finished before each batch: with
// no poll loop running (a queue asleep on its interrupt, or Manual), a
// ring of 8 carries 64 packets in batches of 5 without ever being full.
func TestTXReclaimsBeforeEachBatch(t *testing.T) {
	n := newFakeNIC("ether0", 1)
	n.ringLen = 8
	ep, err := netstack.New(n, netstack.Options{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	var d countingDispatcher
	ep.Attach(&d)
	for sent := 0; sent < 64; sent += 5 {
		var pkts stack.PacketBufferList
		for i := 0; i < 5; i++ {
			pkts.PushBack(stack.NewPacketBuffer(stack.PacketBufferOptions{
				ReserveHeaderBytes: header.EthernetMinimumSize,
				Payload:            buffer.MakeWithData(make([]byte, 100)),
			}))
		}
		got, terr := ep.WritePackets(pkts)
		pkts.Reset()
		if terr != nil || got != 5 {
			t.Fatalf("after %d packets: WritePackets = %d, %v", sent, got, terr)
		}
	}
	if full := stat(t, ep, "tx_ring_full"); full != 0 {
		t.Errorf("ring of 8 was full %d times: the sender did not reclaim", full)
	}
}
