package igc_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/igc"
	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
)

var (
	addrA = netip.MustParsePrefix("10.0.0.1/24")
	addrB = netip.MustParsePrefix("10.0.0.2/24")
)

// host is one simulated machine: an I225 model behind the VT-d model, our
// VT-d driver giving it a domain, igc bound by probe, gVisor on top.
type host struct {
	*testhost.Host[*mi225.NIC]
	nic *igc.Device
}

func newHost(t *testing.T, end *wire.End, last byte, addr netip.Prefix, device uint16, nonCoherent bool) *host {
	t.Helper()
	return newHostTx(t, end, last, addr, device, nonCoherent, testhost.TxModes[0])
}

// newHostTx is newHost with the model's transmit work done as tx says.
func newHostTx(t *testing.T, end *wire.End, last byte, addr netip.Prefix, device uint16, nonCoherent bool, tx testhost.TxMode) *host {
	t.Helper()
	sh := testhost.New(t, testhost.Options{Addr: pci.Addr{Dev: 3}, NonCoherent: nonCoherent, End: end}, func(m *sim.Machine, a pci.Addr) (*mi225.NIC, error) {
		return mi225.Plug(m, a, mi225.Options{Device: device, MAC: [6]byte{0x02, 0, 0, 0, 0, last}, DeferRx: true, DeferTx: tx.Defer, TxPerTouch: tx.PerTouch})
	})
	d, ok := sh.NIC.(*igc.Device)
	if !ok {
		t.Fatalf("probe bound %T, want the igc driver", sh.NIC)
	}
	h := &host{Host: sh, nic: d}
	if addr.IsValid() {
		// No spinning: with DeferRx a frame lands when its queue's loop
		// re-arms the vector, which a loop polling the ring never does, so
		// a loop that spun would only let the packet buffer fill.
		h.Up(t, addr, netstack.Options{Spin: -1})
	}
	return h
}

// Finish is testhost's, and the model must have had no DMA refused.
func (h *host) Finish(t testing.TB) {
	t.Helper()
	h.Host.Finish(t)
	if c := h.Model.Counters(); c.RxDMAFaults != 0 || c.TxDMAFaults != 0 {
		t.Errorf("model DMA faults: rx %d tx %d", c.RxDMAFaults, c.TxDMAFaults)
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
		for _, tx := range testhost.TxModes {
			t.Run(tx.Name+"/"+tc.name, func(t *testing.T) {
				tx.SkipRacy(t)
				w := testhost.Wire(t, wire.Options{SpeedMbps: 2500})
				a := newHostTx(t, w.A(), 1, addrA, 0x15f3, tc.nonCoherent, tx)
				defer a.Finish(t)
				b := newHostTx(t, w.B(), 2, addrB, 0x125c, tc.nonCoherent, tx)
				defer b.Finish(t)
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
				// What arrived before the layout was set (the stacks'
				// IPv6 solicitations as the links came up) was laid out
				// by the default: count from here.
				var built0, constructed0 [2]uint64
				for i, h := range []*host{a, b} {
					built0[i], constructed0[i] = h.Stat(t, "rx_build"), h.Stat(t, "rx_construct")
				}
				testhost.UDPRoundTrip(t, a.Stack, b.Stack, addrA.Addr(), addrB.Addr(), udpSizes(tc.mtu)...)
				testhost.TCPConns(t, a.Stack, b.Stack, addrB.Addr(), tcpConns, size/tcpConns)
				testhost.TCPConns(t, b.Stack, a.Stack, addrA.Addr(), tcpConns, size/tcpConns)
				for i, h := range []*host{a, b} {
					testhost.CheckQueuesSpread(t, h.nic)
					built, constructed := h.Stat(t, "rx_build")-built0[i], h.Stat(t, "rx_construct")-constructed0[i]
					if tc.want == igc.Build && (built == 0 || constructed != 0) || tc.want == igc.Construct && (built != 0 || constructed == 0) {
						t.Errorf("%s: %d built, %d constructed, want all %v", h.nic.Name(), built, constructed, tc.want)
					}
					if h.Stat(t, "tx_tso") == 0 || h.Stat(t, "tx_csum") == 0 {
						t.Errorf("%s: TSO %d, checksum offload %d: want both used", h.nic.Name(), h.Stat(t, "tx_tso"), h.Stat(t, "tx_csum"))
					}
					for _, s := range h.Stack.Endpoints[0].Stats() {
						if s.Name == "rx_csum_hw" && s.Value == 0 {
							t.Errorf("%s: no device-verified receive checksums", h.nic.Name())
						}
					}
					if h.Stat(t, "good_packets_rx") == 0 || h.Stat(t, "good_packets_tx") == 0 {
						t.Errorf("%s: device statistics read nothing", h.nic.Name())
					}
				}
			})
		}
	}
}

func TestSimMTUChangeUnderTraffic(t *testing.T) {
	w := testhost.Wire(t, wire.Options{SpeedMbps: 2500})
	a := newHost(t, w.A(), 1, addrA, 0x15f2, false)
	defer a.Finish(t)
	b := newHost(t, w.B(), 2, addrB, 0x125b, false)
	defer b.Finish(t)
	threshold := igc.MaxFrameBuild - 22
	for _, mtu := range []int{1500, threshold + 1, 2000, threshold, 1500, 576} {
		for _, h := range []*host{a, b} {
			if err := h.nic.Ctl(fmt.Sprintf("mtu %d", mtu)); err != nil {
				t.Fatal(err)
			}
		}
		testhost.UDPRoundTrip(t, a.Stack, b.Stack, addrA.Addr(), addrB.Addr(), 1, mtu-28)
		testhost.TCP(t, a.Stack, b.Stack, addrB.Addr(), 256<<10, nil)
	}
	if a.Stat(t, "rx_build") == 0 || a.Stat(t, "rx_construct") == 0 || a.Stat(t, "rx_relayouts") < 4 {
		t.Errorf("build %d construct %d relayouts %d", a.Stat(t, "rx_build"), a.Stat(t, "rx_construct"), a.Stat(t, "rx_relayouts"))
	}
}

func TestSimLinkSpeeds(t *testing.T) {
	for _, tc := range []struct {
		device uint16
		wire   int
		want   int
	}{{0x15f3, 2500, 2500}, {0x125c, 2500, 2500}, {0x15f3, 1000, 1000}, {0x15f3, 100, 100}, {0x15f3, 10, 10}, {0x15f7, 2500, 1000}} {
		t.Run(fmt.Sprintf("%04x@%d", tc.device, tc.wire), func(t *testing.T) {
			w := testhost.Wire(t, wire.Options{SpeedMbps: tc.wire})
			h := newHost(t, w.A(), 1, netip.Prefix{}, tc.device, false)
			defer h.Finish(t)
			if l := h.nic.Link(); l != (nic.Link{Up: true, SpeedMbps: tc.want, FullDuplex: true}) {
				t.Fatalf("link %+v, want %d Mb/s full duplex", l, tc.want)
			}
		})
	}
}

func TestSimBlankNVM(t *testing.T) {
	for _, dev := range []uint16{0x15fd, 0x125f} {
		w := testhost.Wire(t, wire.Options{})
		h := newHost(t, w.A(), 1, netip.Prefix{}, dev, false)
		m := h.nic.MAC()
		if m[0]&2 == 0 || m[0]&1 != 0 {
			t.Errorf("%04x: mac %x is not a locally administered unicast address", dev, m)
		}
		h.Finish(t)
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
