package e1000e_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/e1000e"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82574"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// machine is one simulated machine with an e1000e model behind VT-d, its
// wire, and the far end of the wire played by the test.
type machine struct {
	*testhost.Host[*m82574.NIC]
	wire *wire.Wire
	peer *testhost.Peer // frames the device put on the wire
	q    nic.Queue
	// nonCoherent is what the test asked for, checked at close.
	nonCoherent bool
}

// machineAddr is where the model sits.
var machineAddr = pci.Addr{Dev: 2}

type rigOpt struct {
	pers        m82574.Personality
	passthrough bool
	nonCoherent bool
	logf        func(format string, args ...any) // the driver's log; nil: the test's
	tx          testhost.TxMode                  // when the model transmits; zero: at the doorbell
}

func newMachine(t testing.TB, o rigOpt) *machine {
	t.Helper()
	logf := o.logf
	if logf == nil {
		logf = t.Logf
		if _, bench := t.(*testing.B); bench {
			logf = func(string, ...any) {}
		}
	}
	mc := &machine{nonCoherent: o.nonCoherent}
	mc.Host = testhost.New(t, testhost.Options{Addr: machineAddr, NonCoherent: o.nonCoherent, Passthrough: o.passthrough, Logf: logf},
		func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) {
			model, err := m82574.Plug(m, a, m82574.Options{Personality: o.pers, DeferTx: o.tx.Defer, TxPerTouch: o.tx.PerTouch})
			if err != nil {
				return nil, err
			}
			if mc.wire, err = wire.New(wire.Options{Clock: m.Clock}); err != nil {
				return nil, err
			}
			mc.peer = testhost.NewPeer(mc.wire.B())
			model.Attach(mc.wire.A())
			return model, nil
		})
	mc.q = mc.NIC.Queues()[0]
	return mc
}

// frame builds an n-byte frame to the NIC's address with a recognisable body.
func (mc *machine) frame(n int, seed byte) []byte {
	f := make([]byte, n)
	mac := mc.NIC.MAC()
	copy(f, mac[:])
	copy(f[6:], []byte{0x02, 0, 0, 0, 0, 9})
	f[12], f[13] = 0x88, 0xb5 // local experimental ethertype
	for i := 14; i < n; i++ {
		f[i] = seed + byte(i)
	}
	return f
}

func (mc *machine) poll() []*nic.RxPacket {
	var got []*nic.RxPacket
	for {
		n := nictest.Receive(mc.q, 64, func(p *nic.RxPacket) { got = append(got, p) })
		if n == 0 {
			return got
		}
	}
}

// close shuts the NIC down and checks nothing stayed pinned or mapped,
// and that a machine asked to be non-coherent ran so, its syncs used.
func (mc *machine) close(t *testing.T) {
	t.Helper()
	if err := mc.NIC.Close(); err != nil {
		t.Fatal(err)
	}
	mc.CheckNoLeaks(t)
	if mc.nonCoherent {
		mc.CheckNonCoherent(t)
	}
}

func TestSimProbe(t *testing.T) {
	mc := newMachine(t, rigOpt{})
	if mc.NIC.Name() != "ether0" || mc.NIC.MAC() != mc.Model.MAC() {
		t.Errorf("%s mac %x, model %x", mc.NIC.Name(), mc.NIC.MAC(), mc.Model.MAC())
	}
	if l := mc.NIC.Link(); !l.Up || l.SpeedMbps != 1000 || !l.FullDuplex {
		t.Errorf("link %+v", l)
	}
	if f := mc.NIC.Features(); !f.TSOv4 || !f.TSOv6 {
		t.Errorf("82574L at 1000 Mb/s: features %+v", f)
	}
	mc.close(t)
}

// TestSimCopybreak sends frames around each copybreak through the model
// and the VT-d model: which path each frame took, its bytes, and, in sync
// mode, that copied frames cost no map, unmap or invalidation.
func TestSimCopybreak(t *testing.T) {
	for _, nc := range []bool{false, true} {
		mc := newMachine(t, rigOpt{nonCoherent: nc})
		// Cycle the whole ring through the copy path so that every slot
		// holds a mapped buffer: from then on the refill maps nothing
		// unless a buffer was handed up.
		mc.NIC.Ctl("copybreak 2048")
		for i := 0; i < 300; i++ {
			mc.wire.B().Send(mc.frame(60, byte(i)))
			for _, p := range mc.poll() {
				p.Data.Release()
			}
		}
		// A refill re-arms the slot cleaned by the previous poll: a
		// handed-off buffer is replaced (one map) one frame later.
		prevHandoff := false
		for _, cb := range []int{0, 256, 2048} {
			if err := mc.NIC.Ctl(fmt.Sprintf("copybreak %d", cb)); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{60, cb - 1, cb, cb + 1, 1514} {
				if n < 60 || n > 1514 {
					continue
				}
				want := mc.frame(n, byte(cb+n))
				copies, handoffs := mc.Stat(t, "rx_copybreak"), mc.Stat(t, "rx_handoff")
				before := mc.IOMMUStats()
				mc.wire.B().Send(want)
				got := mc.poll()
				after := mc.IOMMUStats()
				if len(got) != 1 || !bytes.Equal(got[0].Data.Flatten(), want) {
					t.Fatalf("nc %v cb %d n %d: %d frames, or payload differs", nc, cb, n, len(got))
				}
				got[0].Data.Release()
				dc, dh := mc.Stat(t, "rx_copybreak")-copies, mc.Stat(t, "rx_handoff")-handoffs
				maps, unmaps := after.Maps-before.Maps, after.Unmaps-before.Unmaps
				inv := after.Invalidations() - before.Invalidations()
				wantMaps := uint64(0)
				if prevHandoff {
					wantMaps = 1
				}
				if n < cb {
					if dc != 1 || dh != 0 || maps != wantMaps || unmaps != 0 || inv != 0 {
						t.Errorf("nc %v cb %d n %d (copy): copies %d handoffs %d, iommu %d maps %d unmaps %d invalidations", nc, cb, n, dc, dh, maps, unmaps, inv)
					}
				} else if dh != 1 || dc != 0 || unmaps != 1 || maps != wantMaps {
					t.Errorf("nc %v cb %d n %d (handoff): copies %d handoffs %d, iommu %d maps %d unmaps", nc, cb, n, dc, dh, maps, unmaps)
				}
				prevHandoff = n >= cb
			}
		}
		if len(mc.Unit.Faults()) != 0 {
			t.Errorf("VT-d faults: %v", mc.Unit.Faults())
		}
		mc.close(t)
	}
}

// TestSimCopybreakUnmapMode: the legacy mode unmaps and re-maps every
// buffer, copied or not.
func TestSimCopybreakUnmapMode(t *testing.T) {
	mc := newMachine(t, rigOpt{})
	mc.NIC.Ctl("copybreak 2048")
	mc.NIC.Ctl("copybreak-mode unmap")
	before := mc.IOMMUStats()
	const frames = 600
	for i := 0; i < frames; i++ {
		mc.wire.B().Send(mc.frame(100, byte(i)))
		for _, p := range mc.poll() {
			p.Data.Release()
		}
	}
	after := mc.IOMMUStats()
	if u := after.Unmaps - before.Unmaps; u != frames {
		t.Errorf("%d unmaps for %d copied frames in unmap mode", u, frames)
	}
	if mc.Stat(t, "rx_copybreak") != frames {
		t.Errorf("copies %d", mc.Stat(t, "rx_copybreak"))
	}
	mc.close(t)
}

// send transmits p and reclaims at once, as a poll loop may before the
// device is done with it. A model that defers transmit (DeferTx) then
// goes on at each ICR read of the driver's poll, which a budget of 0
// makes without taking a frame; once the device processed every
// descriptor the driver reclaims again.
func (mc *machine) send(t *testing.T, p *nic.TxPacket) {
	t.Helper()
	mc.peer.Reset()
	if n, err := mc.q.Transmit([]*nic.TxPacket{p}); n != 1 || err != nil {
		t.Fatalf("transmit: %d %v", n, err)
	}
	mc.q.Reclaim()
	polls := 0
	for ; mc.Model.TxPending() > 0; polls++ {
		if polls == 1000 {
			t.Fatalf("transmit: %d descriptors still pending after %d polls; model %+v", mc.Model.TxPending(), polls, mc.Model.Counters().TxCounters)
		}
		nictest.Receive(mc.q, 0, func(p *nic.RxPacket) {
			t.Error("a poll of budget 0 delivered a frame")
			p.Data.Release()
		})
	}
	if polls > 0 {
		mc.q.Reclaim()
	}
}

// TestSimTSOQuirk: an 82574L at 1000 Mb/s hands TSO to the device, which
// segments; the link drops to 100 Mb/s mid-stream and the driver segments
// in software; every frame on the wire fits the MTU.
func TestSimTSOQuirk(t *testing.T) {
	for _, tx := range testhost.TxModes {
		for _, nc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/noncoherent=%v", tx.Name, nc), func(t *testing.T) { testTSOQuirk(t, rigOpt{nonCoherent: nc, tx: tx}) })
		}
	}
}

func testTSOQuirk(t *testing.T, o rigOpt) {
	mc := newMachine(t, o)
	for _, v6 := range []bool{false, true} {
		mc.wire.SetLink(true, 1000)
		mc.poll()
		tso0 := mc.Model.Counters().TxTSO
		p, _, _ := nictest.GSOPacket(v6, 5000, 20000)
		mc.send(t, p)
		if mc.Model.Counters().TxTSO != tso0+1 {
			t.Fatalf("v6 %v: the device segmented %d packets, want 1; model %+v", v6, mc.Model.Counters().TxTSO-tso0, mc.Model.Counters().TxCounters)
		}
		nictest.CheckGSO(t, mc.peer.Frames(), v6, 5000, 20000)

		mc.wire.SetLink(true, 100)
		mc.poll()
		if l := mc.NIC.Link(); l.SpeedMbps != 100 || mc.NIC.Features().TSOv4 {
			t.Fatalf("at 100 Mb/s: link %+v features %+v", l, mc.NIC.Features())
		}
		p, _, _ = nictest.GSOPacket(v6, 25000, 20000)
		mc.send(t, p)
		if mc.Model.Counters().TxTSO != tso0+1 {
			t.Fatal("the device segmented at 100 Mb/s")
		}
		nictest.CheckGSO(t, mc.peer.Frames(), v6, 25000, 20000)
	}
	if mc.Stat(t, "tx_soft_gso") != 2 || mc.Stat(t, "tx_tso") != 2 {
		t.Errorf("tx_soft_gso %d tx_tso %d", mc.Stat(t, "tx_soft_gso"), mc.Stat(t, "tx_tso"))
	}
	aToB, _ := mc.wire.Stats()
	if aToB.MaxLen > 1514 {
		t.Errorf("longest frame on the wire %d", aToB.MaxLen)
	}
	mc.close(t)
}

func TestSimPCHSPTNeverTSO(t *testing.T) {
	for _, tx := range testhost.TxModes {
		t.Run(tx.Name, func(t *testing.T) { testPCHSPTNeverTSO(t, tx) })
	}
}

func testPCHSPTNeverTSO(t *testing.T, tx testhost.TxMode) {
	mc := newMachine(t, rigOpt{pers: m82574.I219LM, tx: tx})
	if mc.NIC.(*e1000e.Device).Type() != e1000e.MacPCHSPT {
		t.Fatalf("type %v", mc.NIC.(*e1000e.Device).Type())
	}
	if err := mc.NIC.Ctl("tso on"); err != nil {
		t.Fatal(err)
	}
	for _, speed := range []int{1000, 100, 1000} {
		mc.wire.SetLink(true, speed)
		mc.poll()
		if f := mc.NIC.Features(); f.TSOv4 || f.TSOv6 {
			t.Fatalf("pch_spt at %d Mb/s: %+v", speed, f)
		}
		p, _, _ := nictest.GSOPacket(false, 1, 9000)
		mc.send(t, p)
		nictest.CheckGSO(t, mc.peer.Frames(), false, 1, 9000)
	}
	if mc.Model.Counters().TxTSO != 0 {
		t.Errorf("the I219 segmented %d packets", mc.Model.Counters().TxTSO)
	}
	mc.close(t)
}

// TestSimBadInput makes the model misbehave: error bits, bad lengths,
// out-of-order write-backs and a DMA fault. The driver drops and counts,
// keeps running and leaks nothing.
func TestSimBadInput(t *testing.T) {
	for _, nc := range []bool{false, true} {
		t.Run(fmt.Sprintf("noncoherent=%v", nc), func(t *testing.T) { testBadInput(t, nc) })
	}
}

func testBadInput(t *testing.T, nc bool) {
	mc := newMachine(t, rigOpt{nonCoherent: nc})
	good := func(k int) {
		t.Helper()
		want := mc.frame(300, byte(k))
		mc.wire.B().Send(want)
		got := mc.poll()
		if len(got) != 1 || !bytes.Equal(got[0].Data.Flatten(), want) {
			t.Fatalf("step %d: good frame after bad input: %d frames", k, len(got))
		}
		got[0].Data.Release()
	}
	drops := func() uint64 {
		return mc.Stat(t, "rx_drop_error") + mc.Stat(t, "rx_drop_length") + mc.Stat(t, "rx_drop_multi") + mc.Stat(t, "rx_drop_dma")
	}
	faults := []m82574.RxFault{
		{Frames: 1, Errors: m82574.RxdErrCE},
		{Frames: 1, Errors: m82574.RxdErrRXE | m82574.RxdErrSE},
		{Frames: 1, SetLength: true, Length: 0},
		{Frames: 1, SetLength: true, Length: 3000},
	}
	for k, f := range faults {
		d0 := drops()
		mc.Model.InjectRx(f)
		mc.wire.B().Send(mc.frame(200, 1))
		if got := mc.poll(); len(got) != 0 {
			t.Errorf("fault %d: %d frames delivered", k, len(got))
			for _, p := range got {
				p.Data.Release()
			}
		}
		if drops() != d0+1 {
			t.Errorf("fault %+v: drops %d -> %d", f, d0, drops())
		}
		good(k)
	}
	// Out of order: the first frame's write-back is held back until the
	// second's is written; nothing may be taken past the gap, then both.
	mc.Model.InjectRx(m82574.RxFault{Frames: 1, OutOfOrder: true})
	a, b := mc.frame(100, 0xa), mc.frame(120, 0xb)
	mc.wire.B().Send(a)
	mc.wire.B().Send(b)
	mc.Model.FlushRx()
	got := mc.poll()
	if len(got) != 2 || !bytes.Equal(got[0].Data.Flatten(), a) || !bytes.Equal(got[1].Data.Flatten(), b) {
		t.Fatalf("out of order: %d frames", len(got))
	}
	for _, p := range got {
		p.Data.Release()
	}
	// A DMA fault: the device completes the descriptor though its write
	// went nowhere. The IOMMU records the fault; the driver keeps going.
	mc.Model.InjectRx(m82574.RxFault{Frames: 1, DMAFault: true})
	mc.wire.B().Send(mc.frame(200, 3))
	for _, p := range mc.poll() {
		p.Data.Release()
	}
	if len(mc.Unit.Faults()) == 0 {
		t.Error("the DMA fault left no fault record")
	}
	good(99)
	mc.close(t)
}

// TestSimSuite runs the checks every driver passes (testhost.Suite) on
// the 82574L and I219-LM models.
func TestSimSuite(t *testing.T) {
	host := func(pers m82574.Personality, nonCoherent, deferRx bool) func(*testing.T, *wire.End, byte) testhost.Rig {
		return func(t *testing.T, end *wire.End, last byte) testhost.Rig {
			return testhost.New(t, testhost.Options{Addr: machineAddr, NonCoherent: nonCoherent, End: end}, func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) {
				return m82574.Plug(m, a, m82574.Options{Personality: pers, MAC: [6]byte{0x02, 0, 0, 0, 0, last}, DeferRx: deferRx})
			})
		}
	}
	testhost.Suite{
		Variants: []testhost.Variant{
			{Name: "82574L", New: host(m82574.M82574L, false, false)},
			{Name: "82574L/noncoherent", New: host(m82574.M82574L, true, false)},
			{Name: "82574L/deferred", New: host(m82574.M82574L, false, true)},
			{Name: "I219-LM", New: host(m82574.I219LM, false, false), NoTSO: true},
		},
		RxRing:  256,
		Stacked: 2,
		TxHost: func(t *testing.T, end *wire.End, tx testhost.TxMode) testhost.Rig {
			return testhost.New(t, testhost.Options{Addr: machineAddr, NonCoherent: true, End: end}, func(m *sim.Machine, a pci.Addr) (*m82574.NIC, error) {
				return m82574.Plug(m, a, m82574.Options{MAC: [6]byte{0x02, 0, 0, 0, 0, 1}, DeferTx: tx.Defer, TxPerTouch: tx.PerTouch})
			})
		},
	}.Run(t)
}
