package igb_test

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/ether9/ether9/drivers/igb"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/probe"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/m82576"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
)

// host is one simulated machine: an 82576 model behind VT-d at 00:03.0,
// bound by the igb driver through probe.
type host struct {
	m     *sim.Machine
	model *m82576.NIC
	unit  *iommu.Unit
	nic   nic.NIC
	dev   *igb.Device
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
	m := sim.NewMachine(sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: nonCoherent})
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	a := pci.Addr{Bus: 0, Dev: 3, Fn: 0}
	model, err := m82576.Plug(m, a, opt)
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
		t.Fatalf("%d NICs", len(nics))
	}
	dev, ok := nics[0].(*igb.Device)
	if !ok {
		t.Fatalf("NIC is a %T", nics[0])
	}
	if dev.MAC() != model.MAC() {
		t.Fatalf("driver MAC %x, model %x", dev.MAC(), model.MAC())
	}
	return &host{m: m, model: model, unit: unit, nic: dev, dev: dev}
}

func (h *host) stat(t testing.TB, name string) uint64 {
	t.Helper()
	for _, s := range h.nic.Stats() {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no stat %q", name)
	return 0
}

// checkClosed checks, after the NIC closed, that nothing stayed pinned or
// mapped and that no DMA faulted.
func (h *host) checkClosed(t testing.TB) {
	t.Helper()
	if f := h.unit.Faults(); len(f) != 0 {
		t.Errorf("%d DMA faults, first %v", len(f), f[0])
	}
	ms := h.m.Mem.Stats()
	if ms.Pins != ms.Unpins || ms.Misuses != 0 {
		t.Errorf("%d pins, %d unpins, %d misuses: %v", ms.Pins, ms.Unpins, ms.Misuses, h.m.Mem.Errors())
	}
	st := h.unit.Stats()
	if st.Maps != st.Unmaps || st.IOVAInUse != 0 {
		t.Errorf("iommu after close: %d maps, %d unmaps, %d IOVA bytes in use", st.Maps, st.Unmaps, st.IOVAInUse)
	}
}

// gen plays the far end of a host's wire: it sends UDP frames to the NIC
// and keeps what comes back.
type gen struct {
	end  *wire.End
	dst  [6]byte
	mu   sync.Mutex
	seen [][]byte
}

func newGen(end *wire.End, dst [6]byte) *gen {
	g := &gen{end: end, dst: dst}
	end.Receive(func(f []byte) {
		g.mu.Lock()
		g.seen = append(g.seen, bytes.Clone(f))
		g.mu.Unlock()
	})
	return g
}

func (g *gen) frames() [][]byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]byte(nil), g.seen...)
}

// udp builds an n-byte IPv4/UDP frame to port 9 carrying seq.
func udp(dst [6]byte, n int, seq uint32) []byte {
	f := make([]byte, n)
	copy(f, dst[:])
	copy(f[6:], []byte{2, 0, 0, 0, 0, 2})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{10, 0, 0, 2, 10, 0, 0, 1})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	sum = sum>>16 + sum&0xffff
	sum += sum >> 16
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	u := ip[20:]
	binary.BigEndian.PutUint16(u[0:], 40000)
	binary.BigEndian.PutUint16(u[2:], 9)
	binary.BigEndian.PutUint16(u[4:], uint16(n-34))
	binary.BigEndian.PutUint32(u[8:], seq)
	for i := 46; i < n; i++ {
		f[i] = byte(seq) + byte(i)
	}
	return f
}

// TestSimZeroCopyCountsExact runs rxdrop, txpush and l2fwd on the model,
// in copy and zero-copy mode, on the queue a 2-tuple filter steers the
// flow to: every frame arrives once, intact, and nothing leaks.
func TestSimZeroCopyCountsExact(t *testing.T) {
	for _, mode := range []xsk.Mode{xsk.Copy, xsk.ZeroCopy} {
		t.Run(mode.String(), func(t *testing.T) {
			w, err := wire.New(wire.Options{})
			if err != nil {
				t.Fatal(err)
			}
			h := newHost(t, w.A(), 1, true)
			g := newGen(w.B(), h.nic.MAC())
			const q = 2
			if _, err := h.dev.Steer(xsk.Filter{UDPPort: 9}, q); err != nil {
				t.Fatal(err)
			}
			u, err := xsk.NewUmem(xsk.UmemConfig{Frames: 1024})
			if err != nil {
				t.Fatal(err)
			}
			s, err := xsk.NewSocket(u, 512)
			if err != nil {
				t.Fatal(err)
			}
			var free []uint64
			for i := 0; i < u.Frames(); i++ {
				free = append(free, u.Frame(i))
			}
			k := u.Fill.ProduceBatch(free[:512])
			free = free[k:]
			if err := h.dev.Bind(q, s, mode); err != nil {
				t.Fatal(err)
			}

			// rxdrop: batches smaller than the fill ring, each drained.
			const n = 2000
			got := 0
			for sent := 0; sent < n; {
				for b := 0; b < 64 && sent < n; b++ {
					g.end.Send(udp(h.nic.MAC(), 60+sent%1400, uint32(sent)))
					sent++
				}
				for spins := 0; got < sent && spins < 1000; spins++ {
					s.Poll(64)
					for {
						d, ok := s.RX.Consume()
						if !ok {
							break
						}
						want := udp(h.nic.MAC(), 60+got%1400, uint32(got))
						if !bytes.Equal(u.Bytes(d.Addr, int(d.Len)), want) {
							t.Fatalf("frame %d: %d bytes, corrupted", got, d.Len)
						}
						got++
						u.Fill.Produce(d.Addr)
					}
				}
			}
			if got != n || s.Stats.RxDelivered.Load() != n || h.model.Counters().RxQueue[q] != n {
				t.Fatalf("rxdrop: app got %d, delivered %d, model wrote %d to queue %d; want %d",
					got, s.Stats.RxDelivered.Load(), h.model.Counters().RxQueue[q], q, n)
			}

			// txpush: every frame reaches the wire once.
			for i := 0; i < n; {
				for len(free) > 0 && i < n && s.TX.Free() > 0 {
					f := udp([6]byte{2, 0, 0, 0, 0, 2}, 60+i%1000, uint32(i))
					copy(u.Bytes(free[0], len(f)), f)
					s.TX.Produce(xsk.Desc{Addr: free[0], Len: uint32(len(f))})
					free = free[1:]
					i++
				}
				s.Poll(64)
				for {
					a, ok := u.Comp.Consume()
					if !ok {
						break
					}
					free = append(free, a)
				}
			}
			for spins := 0; s.Stats.TxSent.Load() < n && spins < 10000; spins++ {
				s.Poll(64)
			}
			seen := g.frames()
			if len(seen) != n || s.Stats.TxSent.Load() != n {
				t.Fatalf("txpush: %d frames on the wire, TxSent %d, want %d", len(seen), s.Stats.TxSent.Load(), n)
			}
			for i, f := range seen {
				if !bytes.Equal(f, udp([6]byte{2, 0, 0, 0, 0, 2}, 60+i%1000, uint32(i))) {
					t.Fatalf("txpush frame %d wrong", i)
				}
			}
			if err := h.dev.Unbind(q); err != nil {
				t.Fatal(err)
			}
			if err := h.nic.Close(); err != nil {
				t.Fatal(err)
			}
			h.checkClosed(t)
		})
	}
}

// A steady stream the stack consumes in time is received into the same
// half pages over and over: no map, no unmap, no IOTLB invalidation.
func TestSimPageReuseNoMaps(t *testing.T) {
	w, err := wire.New(wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t, w.A(), 1, true)
	newGen(w.B(), h.nic.MAC())
	if err := h.nic.Ctl("copybreak 0"); err != nil {
		t.Fatal(err)
	}
	const q = 1
	if _, err := h.dev.Steer(xsk.Filter{UDPPort: 9}, q); err != nil {
		t.Fatal(err)
	}
	queue := h.nic.Queues()[q]
	recv := func(n int) {
		for i := 0; i < n; i++ {
			w.B().Send(udp(h.nic.MAC(), 1000, uint32(i)))
			if queue.Poll(64, func(p *nic.RxPacket) { p.Data.Release() }) != 1 {
				t.Fatalf("frame %d not received on queue %d", i, q)
			}
		}
	}
	recv(600) // every slot has had its page
	before := h.unit.Stats()
	flips := h.stat(t, "rx_page_flips")
	recv(3000)
	after := h.unit.Stats()
	if after.Maps != before.Maps || after.Unmaps != before.Unmaps || after.Invalidations() != before.Invalidations() {
		t.Errorf("steady state: %d maps, %d unmaps, %d invalidations", after.Maps-before.Maps, after.Unmaps-before.Unmaps, after.Invalidations()-before.Invalidations())
	}
	if f := h.stat(t, "rx_page_flips") - flips; f != 3000 {
		t.Errorf("%d page flips for 3000 frames", f)
	}
	if err := h.nic.Close(); err != nil {
		t.Fatal(err)
	}
	h.checkClosed(t)
}
