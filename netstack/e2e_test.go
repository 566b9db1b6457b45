package netstack_test

import (
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/internal/transfer"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
)

// simHost is one simulated machine: a NIC model behind the VT-d model,
// our VT-d driver giving the NIC its own domain, the driver probe binds to
// the model, and a gVisor stack on top.
type simHost struct {
	m     *sim.Machine
	model simNIC
	unit  *iommu.Unit
	s     *netstack.Stack
	ep    *netstack.Endpoint
	// mapped is Maps-Unmaps once the driver was up and the first frames
	// went through: rings and RX buffers in the driver's steady state.
	mapped int64
}

// simNIC is what the test reads of a NIC model.
type simNIC struct {
	mac [6]byte
	// counters returns the model's transmit counters and the receive
	// DMA accesses the IOMMU refused.
	counters func() (nicmodel.TxCounters, uint64)
	// fixedMaps: once traffic stops, the driver holds as many mappings
	// as after bring-up (e1000e copies frames into buffers that stay
	// mapped). igb and igc hand pages up the stack and map new ones, so
	// their count moves; Close still has to unmap everything.
	fixedMaps bool
	// state describes the model's rings and interrupt registers, for a
	// test that stopped making progress.
	state func() string
}

// A simModel plugs one kind of NIC model into a machine at a, with the
// given MAC, its far side on end. DeferRx: frames from the wire reach the
// ring when this machine's driver next touches the device, on its own
// goroutine, the way one CPU sees its NIC; otherwise the sender's
// goroutine would write this machine's ring.
type simModel func(m *sim.Machine, a pci.Addr, mac [6]byte, end *wire.End) (simNIC, error)

var simModels = map[string]simModel{
	"e1000e": func(m *sim.Machine, a pci.Addr, mac [6]byte, end *wire.End) (simNIC, error) {
		n, err := m82574.Plug(m, a, m82574.Options{MAC: mac, DeferRx: true})
		if err != nil {
			return simNIC{}, err
		}
		n.Attach(end)
		return simNIC{n.MAC(), func() (nicmodel.TxCounters, uint64) { c := n.Counters(); return c.TxCounters, c.RxDMAFaults }, true, n.State}, nil
	},
	"igb": func(m *sim.Machine, a pci.Addr, mac [6]byte, end *wire.End) (simNIC, error) {
		n, err := m82576.Plug(m, a, m82576.Options{MAC: mac, DeferRx: true})
		if err != nil {
			return simNIC{}, err
		}
		n.Attach(end)
		return simNIC{n.MAC(), func() (nicmodel.TxCounters, uint64) { c := n.Counters(); return c.TxCounters, c.RxDMAFaults }, false, n.State}, nil
	},
	"igc": func(m *sim.Machine, a pci.Addr, mac [6]byte, end *wire.End) (simNIC, error) {
		n, err := mi225.Plug(m, a, mi225.Options{MAC: mac, DeferRx: true})
		if err != nil {
			return simNIC{}, err
		}
		n.Attach(end)
		return simNIC{n.MAC(), func() (nicmodel.TxCounters, uint64) { c := n.Counters(); return c.TxCounters, c.RxDMAFaults }, false, n.State}, nil
	},
}

func newSimHost(t *testing.T, driver string, end *wire.End, last byte, addrs []netip.Prefix, nonCoherent bool, txQueue int, ep netstack.Options) *simHost {
	t.Helper()
	// Coherent or not, the memory tracks who owns each streaming buffer,
	// and any DMA API misuse fails the test when it ends.
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: nonCoherent, CheckOwnership: true})
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n := m.Mem.Stats().Misuses; n != 0 {
			t.Errorf("%d DMA API misuses: %v", n, m.Mem.Errors())
		}
	})
	model, err := simModels[driver](m, pci.Addr{Dev: 2}, [6]byte{0x02, 0, 0, 0, 0, last}, end)
	if err != nil {
		t.Fatal(err)
	}
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
	if !unit.Enabled() {
		t.Fatal("VT-d translation is off after probe")
	}
	h := &simHost{m: m, model: model, unit: unit}
	h.s, err = netstack.NewStack(netstack.StackOptions{}, netstack.Interface{NIC: nics[0], Addrs: addrs, TxQueue: txQueue, Endpoint: ep})
	if err != nil {
		t.Fatal(err)
	}
	h.ep = h.s.Endpoints[0]
	return h
}

// inUse is the number of live mappings.
func (h *simHost) inUse() int64 {
	st := h.unit.Stats()
	return int64(st.Maps) - int64(st.Unmaps)
}

// checkQuiet checks, with traffic over, that the VT-d unit recorded no
// fault and, where the driver's steady state is fixed, that the mappings
// are back to the count after bring-up.
func (h *simHost) checkQuiet(t *testing.T) {
	t.Helper()
	defer func() {
		if !t.Failed() {
			return
		}
		st := h.unit.Stats()
		t.Logf("%v: maps %d unmaps %d (start %d) stats %v", h.ep.NIC().Name(), st.Maps, st.Unmaps, h.mapped, h.ep.NIC().Stats())
	}()
	if f := h.unit.Faults(); len(f) != 0 {
		t.Errorf("%v: VT-d faults: %v", h.ep.NIC().Name(), f)
	}
	if st := h.unit.Stats(); st.Faults != 0 {
		t.Errorf("VT-d fault records read: %d", st.Faults)
	}
	if !h.model.fixedMaps {
		return
	}
	eventually(t, fmt.Sprintf("mappings back to their start (%d)", h.mapped), func() bool {
		return h.inUse() == h.mapped
	})
}

// checkClosed checks that closing left nothing mapped or pinned; misuses
// are newSimHost's cleanup's to report.
func (h *simHost) checkClosed(t *testing.T) {
	t.Helper()
	st := h.unit.Stats()
	if st.Maps != st.Unmaps || st.IOVAInUse != 0 {
		t.Errorf("after close: %d maps, %d unmaps, %d IOVA bytes in use", st.Maps, st.Unmaps, st.IOVAInUse)
	}
	if ms := h.m.Mem.Stats(); ms.Pins != ms.Unpins {
		t.Errorf("after close: %d pins, %d unpins", ms.Pins, ms.Unpins)
	}
}

func TestSimEndToEnd(t *testing.T) {
	size := 64 << 20
	if testing.Short() {
		size = 8 << 20
	}
	for _, tc := range []struct {
		driver string
		nc     bool
		tq     int
		noGRO  bool
		size   int
	}{
		{"e1000e", false, 0, false, size},
		{"e1000e", true, 0, false, size},
		{"e1000e", false, 1024, false, size / 4},
		{"e1000e", false, 1024, true, size / 4},
		{"igb", false, 1024, false, size / 4},
		{"igc", false, 1024, false, size / 4},
	} {
		driver, nc, tq, size := tc.driver, tc.nc, tc.tq, tc.size
		opt := netstack.Options{NoGRO: tc.noGRO}
		t.Run(fmt.Sprintf("%s/noncoherent=%v/txqueue=%d/gro=%v", driver, nc, tq, !tc.noGRO), func(t *testing.T) {
			// Each case owns its machines and wire: they run side by
			// side, one mostly waiting while the other computes.
			t.Parallel()
			var pcap countWriter
			w, err := wire.New(wire.Options{Pcap: &pcap})
			if err != nil {
				t.Fatal(err)
			}
			a := newSimHost(t, driver, w.A(), 1, []netip.Prefix{addrA, addrA6}, nc, tq, opt)
			b := newSimHost(t, driver, w.B(), 2, []netip.Prefix{addrB, addrB6}, nc, tq, opt)
			opts := transfer.Options{Diag: modelState(a, b)}
			tcp := func(from, to *simHost, dst netip.Addr, n int) {
				t.Helper()
				if err := transfer.TCP(from.s, to.s, dst, n, opts); err != nil {
					t.Fatal(err)
				}
			}
			echo := func(src, dst netip.Addr, n int) {
				t.Helper()
				if err := transfer.UDPEcho(a.s, b.s, src, dst, n, opts); err != nil {
					t.Fatal(err)
				}
			}
			closed := false
			defer func() {
				if !closed {
					a.s.Close()
					b.s.Close()
				}
			}()

			if err := ping(t, a.s, addrB.Addr()); err != nil {
				t.Fatalf("ping: %v", err)
			}
			for _, h := range []*simHost{a, b} {
				h.mapped = h.inUse()
			}
			neigh, terr := a.s.Neighbors(netstack.NICID(0), 0x0800)
			if terr != nil || len(neigh) == 0 {
				t.Fatalf("no ARP entries: %v %s", neigh, terr)
			}
			if mac := b.model.mac; neigh[0].LinkAddr != tcpip.LinkAddress(mac[:]) {
				t.Errorf("ARP learnt %v for %v, the peer's MAC is %x", neigh[0].LinkAddr, neigh[0].Addr, mac)
			}
			for _, n := range []int{1, 1472, 3000} {
				echo(addrA.Addr(), addrB.Addr(), n)
			}

			tcp(a, b, addrB.Addr(), size)
			tcp(b, a, addrA.Addr(), size)

			// IPv6: neighbour discovery needs the solicited-node and
			// all-nodes groups in each NIC's multicast filter. A driver
			// without one (nic.MulticastFilter) never sees a
			// solicitation: its hosts get each other's MAC as static
			// neighbours so that IPv6 unicast is still tested.
			if _, ok := a.ep.NIC().(nic.MulticastFilter); !ok {
				t.Logf("%s has no multicast filter: static IPv6 neighbours", driver)
				for _, n := range []struct {
					h    *simHost
					peer netip.Addr
					mac  [6]byte
				}{{a, addrB6.Addr(), b.model.mac}, {b, addrA6.Addr(), a.model.mac}} {
					if err := n.h.s.AddStaticNeighbor(netstack.NICID(0), ipv6.ProtocolNumber, tcpip.AddrFromSlice(n.peer.AsSlice()), tcpip.LinkAddress(n.mac[:])); err != nil {
						t.Fatalf("static neighbour %v: %s", n.peer, err)
					}
				}
			}
			if err := ping(t, a.s, addrB6.Addr()); err != nil {
				t.Fatalf("ping6: %v", err)
			}
			echo(addrA6.Addr(), addrB6.Addr(), 1200)
			tcp(a, b, addrB6.Addr(), size/8)
			tcp(b, a, addrA6.Addr(), size/8)
			if st := stat(t, a.ep, "rx_packets"); st == 0 {
				t.Errorf("no frames received")
			}

			ab, ba := w.Stats()
			if ab.MaxLen > wireMaxFrame || ba.MaxLen > wireMaxFrame {
				t.Errorf("frames above the MTU on the wire: %d and %d bytes", ab.MaxLen, ba.MaxLen)
			}
			for _, h := range []*simHost{a, b} {
				if c, rxFaults := h.model.counters(); c.TxTSO == 0 || rxFaults != 0 || c.TxDMAFaults != 0 {
					t.Errorf("model counters %+v, %d RX DMA faults: want TSO used at 1000 Mb/s and no DMA faults", c, rxFaults)
				}
				// Each host received a TCP stream: with GRO its in-order
				// segments went up the stack merged.
				frames, up := stat(t, h.ep, "rx_packets"), stat(t, h.ep, "rx_delivered")
				if merged := stat(t, h.ep, "rx_gro") > 0 && up < frames; merged == tc.noGRO {
					t.Errorf("gro %v: %d frames went up as %d packets, %d through GRO", !tc.noGRO, frames, up, stat(t, h.ep, "rx_gro"))
				}
				if pk, bt := stat(t, h.ep, "tx_packets"), stat(t, h.ep, "tx_batches"); tq > 0 && pk <= bt {
					t.Errorf("with a TX queue: %d packets in %d batches, want batches of more than one", pk, bt)
				}
				if stat(t, h.ep, "rx_csum_hw") == 0 {
					t.Errorf("no device-verified checksums")
				}
				h.checkQuiet(t)
			}
			if err := w.Err(); err != nil {
				t.Errorf("capture: %v", err)
			}
			if n := pcap.n.Load(); n < int64(2*size) {
				t.Errorf("capture holds %d bytes for %d bytes of TCP", n, 2*size)
			}

			closed = true
			a.s.Close()
			b.s.Close()
			a.checkClosed(t)
			b.checkClosed(t)
		})
	}
}

// modelState reports the hosts' device models (rings, waiting frames,
// interrupt masks) for a transfer that stopped moving.
func modelState(hs ...*simHost) func() string {
	return func() string {
		var b strings.Builder
		for _, h := range hs {
			fmt.Fprintf(&b, "%s\n", h.model.state())
		}
		return b.String()
	}
}

// countWriter counts what a capture writes; the wire writes under its
// lock while the test reads.
type countWriter struct{ n atomic.Int64 }

func (w *countWriter) Write(b []byte) (int, error) {
	w.n.Add(int64(len(b)))
	return len(b), nil
}
