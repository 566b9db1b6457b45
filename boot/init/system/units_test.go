package system_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/ether9/ether9/boot/init/simmachine"
	"github.com/ether9/ether9/boot/init/status"
	"github.com/ether9/ether9/boot/init/system"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/ns/admin"
	"github.com/ether9/ether9/pci"
)

// The machine: a client-style graphics unit whose scope names the display
// controller at 00:02.0, a server-style unit for root port 00:1c.0 and
// everything below it (a switch port 01:00.0 leads to bus 2, where one
// NIC sits), and the catch-all unit, which has the NIC at 00:03.0.
const (
	gfxBase  = 0xfed80000
	portBase = 0xfed91000
)

var (
	gfxAddr    = pci.Addr{Dev: 2}
	rootPort   = pci.Addr{Dev: 0x1c}
	switchPort = pci.Addr{Bus: 1}
	nearNIC    = pci.Addr{Dev: 3} // ether0, on the catch-all unit
	farNIC     = pci.Addr{Bus: 2} // ether1, behind the bridges
)

// display is a graphics controller no driver claims.
type display struct{ cfg *sim.ConfigSpace }

func newDisplay() *display {
	c := sim.NewConfigSpace(0x8086, 0x46a6, 0x030000, 0)
	c.SetBAR(0, pci.BARMem64, 16<<20, false)
	return &display{cfg: c}
}

func (d *display) Config() *sim.ConfigSpace                          { return d.cfg }
func (d *display) MMIORead(bar int, off uint32, size int) uint64     { return 0 }
func (d *display) MMIOWrite(bar int, off uint32, size int, v uint64) {}

type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

// waitListening waits until the console says the HTTP server listens:
// it does on its own goroutine, and fetches wait for it.
func (l *lines) waitListening(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(l.String(), "http: listening"); {
		if time.Now().After(deadline) {
			t.Fatalf("the HTTP server never listened:\n%s", l)
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type side struct {
	model *m82574.NIC
	peer  *simmachine.Peer
	guest netip.Prefix
}

func plugNIC(t *testing.T, m *sim.Machine, a pci.Addr, mac byte, guest, peer netip.Prefix) side {
	t.Helper()
	model, err := m82574.New(m82574.Options{MAC: [6]byte{0x52, 0x54, 0, 0x12, 0x34, mac}, DeferRx: true}, m.Port(a), m.IRQ(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.Add(a, model); err != nil {
		t.Fatal(err)
	}
	w, err := wire.New(wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model.Attach(w.A())
	p, err := simmachine.NewPeer(w.B(), [6]byte{0x52, 0x55, 0x0a, 0, mac, 2}, []netip.Prefix{peer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return side{model: model, peer: p, guest: guest}
}

// testToken is the machine's ether9.token.
const testToken = "test-token-0123456789"

// fetch GETs /source from the machine's address on this side's wire,
// through the peer's stack, and checks the bytes.
func (s side) fetch(t *testing.T, n int) {
	t.Helper()
	to := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(s.guest.Addr().As4()), Port: 80}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return gonet.DialContextTCP(ctx, s.peer.Stack, to, ipv4.ProtocolNumber)
		},
	}}
	url := fmt.Sprintf("http://%v/source?bytes=%d", s.guest.Addr(), n)
	// Without the token the machine sends nothing of the stream.
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET from %v: %v", s.guest.Addr(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET from %v without the token: %s, want 401", s.guest.Addr(), resp.Status)
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatalf("GET from %v: %v", s.guest.Addr(), err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	want := make([]byte, n)
	status.Pattern(0, want)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("GET from %v: %d bytes (%v), not the pattern", s.guest.Addr(), len(got), err)
	}
}

// scopedMachine builds the machine and starts the system on it, with
// mapUnit (nil: the machine's) mapping the units.
func scopedMachine(t *testing.T, mapUnit func(m *sim.Machine, base uint64) (kernel.Regs, error)) (*sim.Machine, *system.System, *lines, side, side) {
	t.Helper()
	cfg := vtd.QEMU()
	m, err := sim.New(sim.Config{VTd: cfg, Scoped: []sim.ScopedVTd{
		{Base: gfxBase, VTd: cfg, Endpoints: []pci.Addr{gfxAddr}},
		{Base: portBase, VTd: cfg, Bridges: []pci.Addr{rootPort}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for a, d := range map[pci.Addr]sim.Device{
		gfxAddr:    newDisplay(),
		rootPort:   sim.NewBridge(0x8086, 0xa110, 0, 1, 2),
		switchPort: sim.NewBridge(0x8086, 0x1578, 1, 2, 2),
	} {
		if err := m.Bus.Add(a, d); err != nil {
			t.Fatal(err)
		}
	}
	near := plugNIC(t, m, nearNIC, 1, netip.MustParsePrefix("10.0.2.15/24"), netip.MustParsePrefix("10.0.2.2/24"))
	far := plugNIC(t, m, farNIC, 2, netip.MustParsePrefix("10.0.3.15/24"), netip.MustParsePrefix("10.0.3.2/24"))

	plat := simmachine.Platform(m)
	plat.MapUnit = func(base uint64) (kernel.Regs, error) {
		if mapUnit != nil {
			return mapUnit(m, base)
		}
		return m.UnitRegs(base)
	}
	opt := system.DefaultOptions()
	opt.IP, opt.DHCP, opt.Ping, opt.NineP = near.guest, false, false, "off"
	if opt.Token, err = admin.ParseToken(testToken); err != nil {
		t.Fatal(err)
	}
	con := &lines{}
	ctx, cancel := context.WithCancel(context.Background())
	sys, err := system.Start(ctx, plat, opt, con.logf)
	if err != nil {
		cancel()
		t.Fatalf("start: %v\n%s", err, con)
	}
	// The status server, as the default program serves it.
	sys.Go(ctx, "http", func(ctx context.Context) error {
		ln, err := gonet.ListenTCP(sys.Stack().Stack, tcpip.FullAddress{Port: 80}, ipv4.ProtocolNumber)
		if err != nil {
			return fmt.Errorf("listen :80: %s", err)
		}
		return sys.ServeStatus(ctx, ln)
	})
	t.Cleanup(func() {
		cancel()
		sys.Wait()
		if err := sys.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("console:\n%s", con)
		}
	})

	con.waitListening(t)

	// The static address goes to ether0; ether1's is added here, with its
	// on-link route.
	st := sys.Stack()
	pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{
		Address: tcpip.AddrFrom4(far.guest.Addr().As4()), PrefixLen: far.guest.Bits()}}
	if err := st.AddProtocolAddress(netstack.NICID(1), pa, stack.AddressProperties{}); err != nil {
		t.Fatalf("ether1 address: %s", err)
	}
	st.AddRoute(tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: netstack.NICID(1)})
	return m, sys, con, near, far
}

// Each NIC gets its domain on the unit whose device scope holds it, both
// carry TCP with no fault, and the graphics unit is never mapped or
// turned on.
func TestNICsOnTheirOwnUnits(t *testing.T) {
	var mu sync.Mutex
	mapped := map[uint64]int{}
	m, sys, con, near, far := scopedMachine(t, func(m *sim.Machine, base uint64) (kernel.Regs, error) {
		mu.Lock()
		mapped[base]++
		mu.Unlock()
		return m.UnitRegs(base)
	})

	ports := sys.Ports()
	if len(ports) != 2 {
		t.Fatalf("%d ports", len(ports))
	}
	for _, p := range ports {
		want := map[pci.Addr]uint64{nearNIC: sim.VTdBase, farNIC: portBase}[p.Func.Addr]
		if p.Domain == nil || p.IOMMU != want {
			t.Errorf("%s at %v: domain %v on unit %#x, want unit %#x", p.NIC.Name(), p.Func.Addr, p.Domain, p.IOMMU, want)
		}
	}
	units := sys.IOMMUs()
	if len(units) != 2 || units[0].Base != portBase || units[1].Base != sim.VTdBase {
		t.Fatalf("active units %+v, want the root port's and the catch-all", units)
	}

	for range 2 {
		near.fetch(t, 256<<10)
		far.fetch(t, 256<<10)
	}

	for _, u := range units {
		if st := u.Unit.Stats(); st.Faults != 0 || st.Domains != 1 || st.Maps == 0 {
			t.Errorf("unit %#x: %d faults, %d domains, %d maps", u.Base, st.Faults, st.Domains, st.Maps)
		}
	}
	// The hardware side: each NIC's requests walked its own unit's tables.
	for _, r := range m.Units() {
		hs := r.Unit.Stats()
		on := r.Unit.Read32(vtd.GSTS)&vtd.GSTS_TES != 0
		switch r.Base {
		case gfxBase:
			if on || hs.IOTLBHits+hs.IOTLBMisses+hs.Untranslated != 0 || mapped[gfxBase] != 0 {
				t.Errorf("graphics unit touched: translation %v, %+v, mapped %d times", on, hs, mapped[gfxBase])
			}
		default:
			if !on || hs.Faults != 0 || hs.IOTLBHits+hs.IOTLBMisses == 0 || hs.Untranslated != 0 {
				t.Errorf("unit %#x: translation %v, %+v", r.Base, on, hs)
			}
		}
	}
	for _, s := range []side{near, far} {
		if c := s.model.Counters(); c.RxDMAFaults+c.TxDMAFaults != 0 || c.TxFrames == 0 || c.RxFrames == 0 {
			t.Errorf("model counters %+v", c)
		}
	}

	out := con.String()
	for _, want := range []string{
		"iommu: unit 0xfed91000 bridge 00:1c.0 buses 01-02: ",
		"iommu: unit 0xfed90000 include-all: ",
		"iommu: translation on, 4-level\n",
		"iommu: unit 0xfed80000 endpoint 00:02.0: covers no NIC, left untouched\n",
	} {
		if strings.Count(out, want) != 1 {
			t.Errorf("console says %q %d times, want once", want, strings.Count(out, want))
		}
	}

	n := sys.Namespace()
	for p, want := range map[string]string{
		"/dev/iommu/domains":          "00:03.0 domain 1 ether0 unit 0xfed90000\n02:00.0 domain 1 ether1 unit 0xfed91000\n",
		"/dev/iommu/fed91000/domains": "02:00.0 domain 1 ether1\n",
		"/dev/iommu/fed90000/domains": "00:03.0 domain 1 ether0\n",
		"/dev/iommu/faults":           "",
		"/dev/iommu/units":            "0xfed91000 translation on 4-level strict domains 1 faults 0\n0xfed90000 translation on 4-level strict domains 1 faults 0\n",
	} {
		if got, err := n.ReadFile(p); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", p, got, err, want)
		}
	}
	stats, _ := n.ReadFile("/dev/iommu/stats")
	if !strings.Contains(stats, "domains 2\n") || !strings.Contains(stats, "faults 0\n") {
		t.Errorf("/dev/iommu/stats does not add the units up:\n%s", stats)
	}
	// A mode command reaches both units.
	if err := n.WriteFile("/dev/iommu/ctl", "deferred 8"); err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if mode, batch := u.Unit.Mode(); mode.String() != "deferred" || batch != 8 {
			t.Errorf("unit %#x: mode %v %d after the ctl", u.Base, mode, batch)
		}
	}
	if err := sys.Ctl("iommu strict"); err != nil {
		t.Fatal(err)
	}
	far.fetch(t, 64<<10)

	var page bytes.Buffer
	if err := status.Write(&page, sys.Snapshot()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"iommu translation on 4-level\n",
		"iommu faults 0\n",
		"iommu domains 2\n",
		"iommu unit 0xfed80000 idle scope endpoint 00:02.0\n",
		"iommu unit 0xfed91000 on 4-level domains 1 faults 0 scope bridge 00:1c.0 buses 01-02\n",
		"iommu unit 0xfed90000 on 4-level domains 1 faults 0 scope include-all\n",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("status page lacks %q:\n%s", want, page.String())
		}
	}
}

// A unit that cannot be brought up costs its NICs translation, not
// service: the console and the status page say so, and the other unit
// carries on.
func TestUnitThatFailsLeavesItsNICUntranslated(t *testing.T) {
	_, sys, con, near, far := scopedMachine(t, func(m *sim.Machine, base uint64) (kernel.Regs, error) {
		if base == portBase {
			return nil, errors.New("window refused")
		}
		return m.UnitRegs(base)
	})
	near.fetch(t, 64<<10)
	far.fetch(t, 64<<10)
	for _, p := range sys.Ports() {
		translated := p.Domain != nil
		if translated != (p.Func.Addr == nearNIC) {
			t.Errorf("%v: translated %v", p.Func.Addr, translated)
		}
	}
	if us := sys.IOMMUs(); len(us) != 1 || us[0].Base != sim.VTdBase {
		t.Fatalf("active units %+v", us)
	}
	if !strings.Contains(con.String(), "iommu: unit 0xfed91000: window refused; DMA of 02:00.0 untranslated\n") {
		t.Errorf("console does not say why ether1 is untranslated")
	}
	var page bytes.Buffer
	if err := status.Write(&page, sys.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "iommu unit 0xfed91000 failed scope bridge 00:1c.0 buses 01-02\n") {
		t.Errorf("status page:\n%s", page.String())
	}
}
