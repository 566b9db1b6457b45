package testhost

import (
	"net/netip"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/netstack"
)

// Rig is a driver test's host as Suite uses it: a Host (or a type
// embedding one), closed and checked by Finish, which a driver's host
// may replace to check more of its model at the end.
type Rig interface {
	node() *Node
	Finish(t testing.TB)
}

func (h *Node) node() *Node { return h }

// Variant is one way a driver's tests build a host: coherent or not, a
// device id, a policy set.
type Variant struct {
	Name string
	// New builds the host on end, the model's MAC ending in last.
	New func(t *testing.T, end *wire.End, last byte) Rig
	// NoTSO says the driver never lets this part segment: the software
	// does it with "tso on" too.
	NoTSO bool
}

// Suite is what every driver's hosts must do on the simulated machine,
// the same checks for each driver, so that a rule one driver keeps and
// another breaks shows as the same failing test. The RX checksum, DMA
// fault and TSO checks run on every variant; the rest on the first.
type Suite struct {
	Wire     wire.Options // the wire every check's host sits on
	Variants []Variant
	// RxRing is the RX ring's size in descriptors.
	RxRing int
	// Stacked is the variant two stacks talk over in the IPv6 check; its
	// model must order receive DMA with the poll loop (DeferRx) for the
	// check to run under -race.
	Stacked int
	// Stack is the endpoint options of those stacks.
	Stack netstack.Options
	// IRQ runs CheckIRQ on every variant, frame q for UDP port 9000+q,
	// steered to queue q (the NIC is an xsk.Binder).
	IRQ bool
	// TxHost, if set, builds the host CheckTxNoMaps runs on, once for
	// each of TxModes: a non-coherent one, the model's transmit work
	// done as tx says.
	TxHost func(t *testing.T, end *wire.End, tx TxMode) Rig
}

// Run runs the suite, one subtest a check and variant.
func (s Suite) Run(t *testing.T) {
	each := func(name string, f func(t *testing.T, v Variant, w *wire.Wire)) {
		t.Run(name, func(t *testing.T) {
			for _, v := range s.Variants {
				t.Run(v.Name, func(t *testing.T) { f(t, v, Wire(t, s.Wire)) })
			}
		})
	}
	// CheckRxCsum: CsumOK set exactly on the good frames.
	each("RxCsum", func(t *testing.T, v Variant, w *wire.Wire) {
		h := v.New(t, w.A(), 1)
		CheckRxCsum(t, h.node().NIC, w.B())
		h.Finish(t)
	})
	// A frame the model wrote into an unmapped IOVA, its descriptor
	// still written back done, is dropped and counted, not delivered
	// with what the buffer held before; the ring carries on.
	each("InjectUnmappedRx", func(t *testing.T, v Variant, w *wire.Wire) {
		v.New(t, w.A(), 1).node().CheckInjectUnmappedRx(t, s.RxRing, w.B().Send)
	})
	// A GSO packet is cut by the model from the driver's TSO context,
	// and with "tso off" (or on a part the driver never lets TSO) by the
	// driver in software; either way the wire carries full-MSS segments
	// but the last, with the headers, checksums and stream whole. Fails
	// if the driver programs or cuts at less than the packet's MSS.
	each("TSOOnTheWire", func(t *testing.T, v Variant, w *wire.Wire) {
		peer := NewPeer(w.B())
		h := v.New(t, w.A(), 1)
		n := h.node()
		q := n.NIC.Queues()[0]
		for _, ctl := range []string{"tso on", "tso off"} {
			if err := n.NIC.Ctl(ctl); err != nil {
				t.Fatal(err)
			}
			for _, v6 := range []bool{false, true} {
				f := n.NIC.Features()
				stat := "tx_soft_gso"
				if !v6 && f.TSOv4 || v6 && f.TSOv6 {
					stat = "tx_tso"
				}
				if want := ctl == "tso on" && !v.NoTSO; (stat == "tx_tso") != want {
					t.Fatalf("%s on a part with TSO %v: features %+v", ctl, !v.NoTSO, f)
				}
				before := n.Stat(t, stat)
				nictest.TransmitGSO(t, q, peer, v6, 5000, 20000)
				if got := n.Stat(t, stat) - before; got != 1 {
					t.Errorf("%s, v6 %v, features %+v: %s moved by %d, want 1", ctl, v6, f, stat, got)
				}
			}
		}
		h.Finish(t)
	})
	if s.IRQ {
		// The legacy INTx path, every queue on the one line.
		each("IRQ", func(t *testing.T, v Variant, w *wire.Wire) {
			h := v.New(t, w.A(), 1)
			n := h.node()
			b, ok := n.NIC.(xsk.Binder)
			if !ok {
				t.Fatalf("%T steers no frames", n.NIC)
			}
			for q := range n.NIC.Queues() {
				if _, err := b.Steer(xsk.Filter{UDPPort: uint16(9000 + q)}, q); err != nil {
					t.Fatal(err)
				}
			}
			CheckIRQ(t, IRQRig{
				Machine: n.Machine, Addr: n.Addr, NIC: n.NIC,
				Send: func(q int) { w.B().Send(UDPFrame(n.NIC.MAC(), uint16(9000+q), 64, 0)) },
			})
			h.Finish(t)
		})
	}
	if s.TxHost != nil {
		// Frames and TSO packets go out copied into the ring's bounce
		// space, mapped once when the ring was made: no IOMMU map per
		// packet, every frame on the wire with its own bytes, also when
		// the model reads each descriptor's buffer only later
		// (tx-deferred), so that a bounce slot reused before its
		// descriptor is done shows.
		t.Run("TxNoMaps", func(t *testing.T) {
			for _, tx := range TxModes {
				t.Run(tx.Name, func(t *testing.T) {
					w := Wire(t, s.Wire)
					peer := NewPeer(w.B())
					h := s.TxHost(t, w.A(), tx)
					n := h.node()
					CheckTxNoMaps(t, n.NIC, n.NIC.Queues()[0], peer, "tso on", func() uint64 { return n.IOMMUStats().Maps })
					h.Finish(t)
				})
			}
		})
	}
	first := s.Variants[0]
	// Frames whose data overlap in one chunk, all in flight at once
	// (mapped, where a driver maps them), all reach the wire with their
	// own bytes.
	t.Run("TxSharedChunk", func(t *testing.T) {
		w := Wire(t, s.Wire)
		peer := NewPeer(w.B())
		h := first.New(t, w.A(), 1)
		n := h.node()
		CheckTxSharedChunk(t, n.NIC.Queues()[0], peer)
		if m := n.Stat(t, "tx_map_failures"); m != 0 {
			t.Errorf("tx_map_failures %d", m)
		}
		h.Finish(t)
	})
	// The filter's commands and interface, frame by frame on the model.
	t.Run("MulticastFilter", func(t *testing.T) {
		w := Wire(t, s.Wire)
		h := first.New(t, w.A(), 1)
		CheckMulticastFilter(t, h.node().NIC, w.B())
		h.Finish(t)
	})
	// IPv6 between two machines with no static neighbours: neighbour
	// discovery's solicitations go to solicited-node groups, which the
	// model's MTA passes only when the driver programs it; a TCP
	// transfer then moves every byte.
	t.Run("IPv6NeighbourDiscovery", func(t *testing.T) {
		addrA, addrB := netip.MustParsePrefix("2001:db8::1/64"), netip.MustParsePrefix("2001:db8::2/64")
		w := Wire(t, s.Wire)
		v := s.Variants[s.Stacked]
		a, b := v.New(t, w.A(), 1), v.New(t, w.B(), 2)
		a.node().Up(t, addrA, s.Stack)
		b.node().Up(t, addrB, s.Stack)
		TCP(t, b.node().Stack, a.node().Stack, addrA.Addr(), 64<<10, nil)
		a.Finish(t)
		b.Finish(t)
	})
}
