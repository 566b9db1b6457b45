package igb_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ether9/ether9/drivers/igb"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/drivers/internal/xskapp"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// host is one simulated machine: an 82576 model behind VT-d at 00:03.0,
// bound by the igb driver through probe.
type host struct {
	*testhost.Host[*m82576.NIC]
	dev *igb.Device
}

func newHost(t testing.TB, end *wire.End, last byte, nonCoherent bool) *host {
	t.Helper()
	return newHostWith(t, end, last, nonCoherent, m82576.Options{})
}

// newDeferredHost is newHost with a model whose frames reach a ring only
// on the driver's goroutine (DeferRx), for tests that run under -race.
func newDeferredHost(t testing.TB, end *wire.End, last byte, nonCoherent bool) *host {
	t.Helper()
	return newHostWith(t, end, last, nonCoherent, m82576.Options{DeferRx: true})
}

// newHostWith plugs an 82576 model with opt (its MAC ending in last) into
// a simulated machine and binds the driver to it.
func newHostWith(t testing.TB, end *wire.End, last byte, nonCoherent bool, opt m82576.Options) *host {
	t.Helper()
	opt.MAC = [6]byte{0x52, 0x54, 0, 0, 0, last}
	sh := testhost.New(t, testhost.Options{Addr: pci.Addr{Dev: 3}, NonCoherent: nonCoherent, End: end}, func(m *sim.Machine, a pci.Addr) (*m82576.NIC, error) {
		return m82576.Plug(m, a, opt)
	})
	dev, ok := sh.NIC.(*igb.Device)
	if !ok {
		t.Fatalf("NIC is a %T", sh.NIC)
	}
	if dev.MAC() != sh.Model.MAC() {
		t.Fatalf("driver MAC %x, model %x", dev.MAC(), sh.Model.MAC())
	}
	return &host{Host: sh, dev: dev}
}

// udp builds an n-byte IPv4/UDP frame to port 9 carrying seq.
func udp(dst [6]byte, n int, seq uint32) []byte { return testhost.UDPFrame(dst, 9, n, seq) }

// TestSimZeroCopyCountsExact runs rxdrop, txpush and l2fwd on the model,
// in copy and zero-copy mode, on the queue a 2-tuple filter steers the
// flow to: every frame arrives once, intact, and nothing leaks.
func TestSimZeroCopyCountsExact(t *testing.T) {
	for _, tx := range testhost.TxModes {
		for _, mode := range []xsk.Mode{xsk.Copy, xsk.ZeroCopy} {
			t.Run(tx.Name+"/"+mode.String(), func(t *testing.T) { testZeroCopyCounts(t, tx, mode) })
		}
	}
}

func testZeroCopyCounts(t *testing.T, tx testhost.TxMode, mode xsk.Mode) {
	w := testhost.Wire(t, wire.Options{})
	h := newHostWith(t, w.A(), 1, true, m82576.Options{DeferTx: tx.Defer, TxPerTouch: tx.PerTouch})
	g := testhost.NewPeer(w.B())
	const q = 2
	if _, err := h.dev.Steer(xsk.Filter{UDPPort: 9}, q); err != nil {
		t.Fatal(err)
	}
	a := xskapp.New(t, 1024, 512, 512)
	s, u := a.S, a.S.Umem
	if err := h.dev.Bind(q, a.S, mode); err != nil {
		t.Fatal(err)
	}

	// rxdrop: batches smaller than the fill ring, each drained.
	const n = 2000
	got := 0
	for sent := 0; sent < n; {
		for b := 0; b < 64 && sent < n; b++ {
			g.Send(udp(h.NIC.MAC(), 60+sent%1400, uint32(sent)))
			sent++
		}
		for spins := 0; got < sent && spins < 1000; spins++ {
			s.Poll(64)
			for {
				d, ok := s.RX.Consume()
				if !ok {
					break
				}
				want := udp(h.NIC.MAC(), 60+got%1400, uint32(got))
				if !bytes.Equal(u.Bytes(d.Addr, int(d.Len)), want) {
					t.Fatalf("frame %d: %d bytes, corrupted", got, d.Len)
				}
				got++
				u.Fill.Produce(d.Addr)
			}
		}
	}
	if got != n || s.Stats.RxDelivered.Load() != n || h.Model.Counters().RxQueue[q] != n {
		t.Fatalf("rxdrop: app got %d, delivered %d, model wrote %d to queue %d; want %d",
			got, s.Stats.RxDelivered.Load(), h.Model.Counters().RxQueue[q], q, n)
	}

	// txpush: every frame reaches the wire once, as the
	// application wrote it before the frame came back to it.
	pushed := func(i int) []byte { return udp([6]byte{2, 0, 0, 0, 0, 2}, 60+i%1000, uint32(i)) }
	checked := 0
	for i, idle := 0, 0; i < n || g.Len() < n; {
		g.Check(t, &checked, pushed)
		moved, wire := false, g.Len()
		for len(a.Free) > 0 && i < n && s.TX.Free() > 0 {
			f := pushed(i)
			copy(u.Bytes(a.Free[0], len(f)), f)
			s.TX.Produce(xsk.Desc{Addr: a.Free[0], Len: uint32(len(f))})
			a.Free = a.Free[1:]
			i++
			moved = true
		}
		s.Poll(64)
		if a.Complete() > 0 || moved || g.Len() > wire {
			idle = 0
			continue
		}
		a.Idle(t, &idle, func() string {
			return fmt.Sprintf("txpush: %d queued, %d on the wire, model %+v", i, g.Len(), h.Model.Counters().TxCounters)
		})
	}
	for spins := 0; s.Stats.TxSent.Load() < n && spins < 10000; spins++ {
		s.Poll(64)
	}
	seen := g.Frames()
	if len(seen) != n || s.Stats.TxSent.Load() != n {
		t.Fatalf("txpush: %d frames on the wire, TxSent %d, want %d", len(seen), s.Stats.TxSent.Load(), n)
	}
	g.Check(t, &checked, pushed)
	if err := h.dev.Unbind(q); err != nil {
		t.Fatal(err)
	}
	h.Finish(t)
}

// A steady stream the stack consumes in time is received into the same
// half pages over and over: no map, no unmap, no IOTLB invalidation.
func TestSimPageReuseNoMaps(t *testing.T) {
	w := testhost.Wire(t, wire.Options{})
	h := newHost(t, w.A(), 1, true)
	if err := h.NIC.Ctl("copybreak 0"); err != nil {
		t.Fatal(err)
	}
	const q = 1
	if _, err := h.dev.Steer(xsk.Filter{UDPPort: 9}, q); err != nil {
		t.Fatal(err)
	}
	queue := h.NIC.Queues()[q]
	recv := func(n int) {
		for i := 0; i < n; i++ {
			w.B().Send(udp(h.NIC.MAC(), 1000, uint32(i)))
			if nictest.Receive(queue, 64, func(p *nic.RxPacket) { p.Data.Release() }) != 1 {
				t.Fatalf("frame %d not received on queue %d", i, q)
			}
		}
	}
	recv(600) // every slot has had its page
	before := h.Unit.Stats()
	flips := h.Stat(t, "rx_page_flips")
	recv(3000)
	after := h.Unit.Stats()
	if after.Maps != before.Maps || after.Unmaps != before.Unmaps || after.Invalidations() != before.Invalidations() {
		t.Errorf("steady state: %d maps, %d unmaps, %d invalidations", after.Maps-before.Maps, after.Unmaps-before.Unmaps, after.Invalidations()-before.Invalidations())
	}
	if f := h.Stat(t, "rx_page_flips") - flips; f != 3000 {
		t.Errorf("%d page flips for 3000 frames", f)
	}
	h.Finish(t)
}
