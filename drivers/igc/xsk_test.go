package igc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/ether9/ether9/drivers/igc"
	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/testhost"
	"github.com/ether9/ether9/drivers/internal/xskapp"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim/mi225"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/wire"
	"github.com/ether9/ether9/pci"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

const etherTypeLocal = 0x88b5 // IEEE local experimental

// xdpHost is an I225 model bound by igc with no stack on it; the far end
// of its wire is the test's traffic generator, which also collects what
// the NIC sends.
type xdpHost struct {
	*host
	peer *testhost.Peer
	regs kernel.Regs
}

func newXDPHost(t *testing.T) *xdpHost {
	t.Helper()
	return newXDPHostTx(t, testhost.TxModes[0])
}

// newXDPHostTx is newXDPHost with the model's transmit work done as tx
// says.
func newXDPHostTx(t *testing.T, tx testhost.TxMode) *xdpHost {
	t.Helper()
	w := testhost.Wire(t, wire.Options{SpeedMbps: 2500})
	h := &xdpHost{host: newHostTx(t, w.A(), 1, netip.Prefix{}, 0x15f3, false, tx), peer: testhost.NewPeer(w.B())}
	regs, err := h.Machine.Bus.Regs(pci.Addr{Dev: 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.regs = regs
	// RSS off: what no filter places goes to queue 0.
	if err := h.nic.Ctl("rss off"); err != nil {
		t.Fatal(err)
	}
	return h
}

// dma lets the model move the frames waiting in its packet buffer into
// queue q's ring: with DeferRx it does so when the driver's receive path
// touches the device, and a queue polled by its socket alone may touch
// nothing until a descriptor completes. Reading RDH is such a touch.
func (h *xdpHost) dma(q int) { h.regs.Read32(mi225.RxQ(mi225.RDH, q)) }

// queueFrames is the model's count of frames written to queue q's ring.
func (h *xdpHost) queueFrames(q int) uint64 { return h.Model.Counters().RxQueueFrames[q] }

// txCounters is the model's transmit side, for a stuck test to report.
func (h *xdpHost) txCounters() nicmodel.TxCounters { return h.Model.Counters().TxCounters }

// xdpFrame is an n-byte frame to the host of the given EtherType, its
// payload numbered by seed.
func xdpFrame(n int, etype uint16, seed int) []byte {
	f := make([]byte, n)
	copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 0x99})
	binary.BigEndian.PutUint16(f[12:], etype)
	for i := 14; i < n; i++ {
		f[i] = byte(seed + i)
	}
	if n >= 18 {
		binary.BigEndian.PutUint32(f[14:], uint32(seed))
	}
	return f
}

func TestXDPRxDropCountsExact(t *testing.T) {
	for _, m := range xskapp.Modes {
		t.Run(m.String(), func(t *testing.T) {
			h := newXDPHost(t)
			defer h.Finish(t)
			a := xskapp.New(t, 512, 512, 256)
			if err := h.nic.Bind(0, a.S, m); err != nil {
				t.Fatal(err)
			}
			if l, _ := h.nic.Layout(0); m == xsk.Copy && l != igc.Construct {
				t.Fatalf("copy mode: layout %v, want construct (a program is attached)", l)
			}
			built, constructed := h.Stat(t, "rx_build"), h.Stat(t, "rx_construct")
			const frames = 2000
			got := 0
			maps0 := -1
			for sent := 0; sent < frames; {
				if maps0 < 0 && sent >= 256 {
					maps0 = int(h.Unit.Stats().Maps) // every descriptor has been armed
				}
				for k := 0; k < 32 && sent < frames; k++ {
					h.peer.Send(xdpFrame(60+sent%1400, etherTypeLocal, sent))
					sent++
				}
				h.dma(0)
				a.S.Poll(64)
				for _, d := range a.RX(t) {
					if !bytes.Equal(a.S.Umem.Bytes(d.Addr, int(d.Len)), xdpFrame(60+got%1400, etherTypeLocal, got)) {
						t.Fatalf("frame %d corrupted", got)
					}
					got++
					a.Free = append(a.Free, d.Addr)
				}
				a.Fill(len(a.Free))
			}
			if got != frames || a.S.Stats.RxDelivered.Load() != frames || h.Stat(t, "xdp_redirect") != frames || h.queueFrames(0) != frames {
				t.Fatalf("got %d, delivered %d, redirects %d, model queue 0 %d, want %d",
					got, a.S.Stats.RxDelivered.Load(), h.Stat(t, "xdp_redirect"), h.queueFrames(0), frames)
			}
			if m == xsk.ZeroCopy {
				if maps := int(h.Unit.Stats().Maps); maps != maps0 {
					t.Errorf("%d maps while receiving", maps-maps0)
				}
				// The frame stays in the application's buffer: neither
				// built around nor constructed.
				if b, c := h.Stat(t, "rx_build")-built, h.Stat(t, "rx_construct")-constructed; b != 0 || c != 0 {
					t.Errorf("zero-copy: %d frames built, %d constructed", b, c)
				}
			}
			if err := h.nic.Unbind(0); err != nil {
				t.Fatal(err)
			}
			a.Account(t, nil)
			if l, _ := h.nic.Layout(0); l != igc.Build {
				t.Fatalf("after unbind: layout %v, want build", l)
			}
		})
	}
}

// TestXDPTxPushCountsExact sends frames from the socket's frames, which
// the application rewrites as soon as they come back through the
// completion ring: with the model deferring transmit, a frame completed
// before the device read it goes out with another frame's bytes.
func TestXDPTxPushCountsExact(t *testing.T) {
	for _, tx := range testhost.TxModes {
		for _, m := range xskapp.Modes {
			t.Run(tx.Name+"/"+m.String(), func(t *testing.T) { testXDPTxPush(t, tx, m) })
		}
	}
}

func testXDPTxPush(t *testing.T, tx testhost.TxMode, m xsk.Mode) {
	h := newXDPHostTx(t, tx)
	defer h.Finish(t)
	a := xskapp.New(t, 256, 0, 256)
	if err := h.nic.Bind(2, a.S, m); err != nil {
		t.Fatal(err)
	}
	pkts0 := h.Model.Counters().TxPackets
	const frames = 3000
	sent, checked := 0, 0
	check := func() {
		h.peer.Check(t, &checked, func(i int) []byte { return xdpFrame(60+i%1000, etherTypeLocal, i) })
	}
	for idle := 0; sent < frames || h.peer.Len() < frames; {
		check()
		moved := false
		for len(a.Free) > 0 && sent < frames && a.S.TX.Free() > 0 {
			f := a.Free[0]
			a.Free = a.Free[1:]
			b := xdpFrame(60+sent%1000, etherTypeLocal, sent)
			copy(a.S.Umem.Bytes(f, len(b)), b)
			a.S.TX.Produce(xsk.Desc{Addr: f, Len: uint32(len(b))})
			sent++
			moved = true
		}
		wire := h.peer.Len()
		a.S.Poll(64)
		if a.Complete() > 0 || moved || h.peer.Len() > wire {
			idle = 0
			continue
		}
		a.Idle(t, &idle, func() string {
			return fmt.Sprintf("%d queued, %d on the wire, model %+v", sent, h.peer.Len(), h.txCounters())
		})
	}
	for idle := 0; a.S.Stats.TxSent.Load() < frames; {
		a.S.Poll(64)
		if a.Complete() > 0 {
			idle = 0
			continue
		}
		a.Idle(t, &idle, func() string { return fmt.Sprintf("%d of %d sends completed", a.S.Stats.TxSent.Load(), frames) })
	}
	check()
	if n, p := a.S.Stats.TxSent.Load(), h.Model.Counters().TxPackets-pkts0; n != frames || p != frames || h.peer.Len() != frames {
		t.Errorf("TxSent %d, model sent %d, wire %d, want %d", n, p, h.peer.Len(), frames)
	}
	bounced := h.Stat(t, "tx_bounced")
	if m == xsk.ZeroCopy && bounced != 0 || m == xsk.Copy && bounced != frames {
		t.Errorf("%v: %d frames copied", m, bounced)
	}
	if err := h.nic.Unbind(2); err != nil {
		t.Fatal(err)
	}
	a.Account(t, nil)
}

// swapMAC turns a received frame around.
func swapMAC(b []byte) {
	var tmp [6]byte
	copy(tmp[:], b[0:6])
	copy(b[0:6], b[6:12])
	copy(b[6:12], tmp[:])
}

// TestXDPL2FwdCountsExact forwards received frames back out in place;
// a frame the application gets back through the completion ring is
// filled again and receives the next frame.
func TestXDPL2FwdCountsExact(t *testing.T) {
	for _, tx := range testhost.TxModes {
		for _, m := range xskapp.Modes {
			t.Run(tx.Name+"/"+m.String(), func(t *testing.T) { testXDPL2Fwd(t, tx, m) })
		}
	}
}

func testXDPL2Fwd(t *testing.T, tx testhost.TxMode, m xsk.Mode) {
	h := newXDPHostTx(t, tx)
	defer h.Finish(t)
	a := xskapp.New(t, 512, 256, 256)
	if err := h.nic.Bind(0, a.S, m); err != nil {
		t.Fatal(err)
	}
	const frames = 2000
	sent, fwd := 0, 0
	var backlog []xsk.Desc // received, waiting for room on the TX ring
	for idle := 0; fwd < frames || a.S.Stats.TxSent.Load() < frames || h.peer.Len() < frames; {
		moved, wire := false, h.peer.Len()
		// The far end sends while fewer than a fill ring's worth are
		// on their way back: more would find no frame to land in, as
		// the forwarded ones come back only as they complete.
		for k := 0; k < 16 && sent < frames && sent-h.peer.Len() < 256; k++ {
			h.peer.Send(xdpFrame(60+sent%1400, etherTypeLocal, sent))
			sent++
			moved = true
		}
		h.dma(0)
		a.S.Poll(64)
		for _, d := range a.RX(t) {
			swapMAC(a.S.Umem.Bytes(d.Addr, int(d.Len)))
			backlog = append(backlog, d)
			moved = true
		}
		for len(backlog) > 0 && a.S.TX.Produce(backlog[0]) {
			backlog = backlog[1:]
			fwd++
		}
		a.S.Poll(64)
		if a.Complete() > 0 {
			moved = true
		}
		a.Fill(len(a.Free))
		if moved || h.peer.Len() > wire {
			idle = 0
			continue
		}
		a.Idle(t, &idle, func() string {
			return fmt.Sprintf("%d sent, %d forwarded, %d on the wire, model %+v", sent, fwd, h.peer.Len(), h.txCounters())
		})
	}
	if h.peer.Len() != frames || h.queueFrames(0) != frames {
		t.Fatalf("%d forwarded onto the wire, model queue 0 got %d, want %d", h.peer.Len(), h.queueFrames(0), frames)
	}
	for i, f := range h.peer.Frames() {
		want := xdpFrame(60+i%1400, etherTypeLocal, i)
		swapMAC(want)
		if !bytes.Equal(f, want) {
			t.Fatalf("forwarded frame %d wrong", i)
		}
	}
	if bounced := h.Stat(t, "tx_bounced"); m == xsk.ZeroCopy && bounced != 0 {
		t.Errorf("zero-copy forwarding copied %d frames", bounced)
	}
	if err := h.nic.Unbind(0); err != nil {
		t.Fatal(err)
	}
	a.Account(t, nil)
}

// TestXDPUnbindUnderTraffic unbinds while frames arrive and the
// application forwards them: every frame the socket was given comes back
// and nothing stays mapped (checked at close).
func TestXDPUnbindUnderTraffic(t *testing.T) {
	for _, m := range xskapp.Modes {
		t.Run(m.String(), func(t *testing.T) {
			h := newXDPHost(t)
			defer h.Finish(t)
			a := xskapp.New(t, 256, 128, 64)
			if err := h.nic.Bind(0, a.S, m); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var senders sync.WaitGroup
			senders.Add(1)
			go func() {
				defer senders.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					h.peer.Send(xdpFrame(60+i%200, etherTypeLocal, i))
				}
			}()
			var held []xsk.Desc
			done := make(chan struct{})
			unbound := make(chan error, 1)
			go func() {
				defer close(done)
				started := false
				for i := 0; ; i++ {
					if !started && (a.S.Stats.RxDelivered.Load() >= 200 || i == 100000) {
						started = true
						go func() { unbound <- h.nic.Unbind(0) }()
					}
					h.dma(0)
					a.S.Poll(32)
					for _, d := range a.RX(t) {
						if len(held) < 8 {
							held = append(held, d) // the application keeps a few
							continue
						}
						if !a.S.TX.Produce(d) {
							a.Free = append(a.Free, d.Addr)
						}
					}
					a.Complete()
					a.Fill(len(a.Free))
					if started && len(unbound) > 0 {
						return
					}
				}
			}()
			<-done
			close(stop)
			senders.Wait()
			if err := <-unbound; err != nil {
				t.Fatal(err)
			}
			// Unbound: polling the socket does nothing, and the frames
			// left on its TX ring were never taken.
			if a.S.Poll(64) != 0 {
				t.Fatal("an unbound socket still polls its queue")
			}
			for {
				d, ok := a.S.TX.Consume()
				if !ok {
					break
				}
				a.Free = append(a.Free, d.Addr)
			}
			if a.S.Stats.RxDelivered.Load() == 0 {
				t.Fatal("nothing delivered before the unbind")
			}
			a.Account(t, held)
			st := &a.S.Stats
			t.Logf("delivered %d, sent %d, aborted %d, returned %d", st.RxDelivered.Load(), st.TxSent.Load(), st.TxAborted.Load(), st.RxReturned.Load())
		})
	}
}

func TestXDPFillEmptyAndRxRingFull(t *testing.T) {
	for _, m := range xskapp.Modes {
		t.Run(m.String()+"/fill empty", func(t *testing.T) {
			h := newXDPHost(t)
			defer h.Finish(t)
			a := xskapp.New(t, 64, 8, 64)
			if err := h.nic.Bind(0, a.S, m); err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				h.peer.Send(xdpFrame(100, etherTypeLocal, i))
			}
			h.dma(0)
			a.S.Poll(64)
			rx := a.RX(t)
			got := len(rx)
			st := &a.S.Stats
			switch m {
			case xsk.Copy:
				// The device took all 20 into the ring's own buffers; the
				// driver had frames for 8.
				if got != 8 || st.RxFillEmpty.Load() != 12 || h.queueFrames(0) != 20 {
					t.Fatalf("got %d, fill empty %d, model queue 0 %d; want 8, 12, 20", got, st.RxFillEmpty.Load(), h.queueFrames(0))
				}
			case xsk.ZeroCopy:
				// Only 8 descriptors were armed: the device dropped the
				// rest for want of a descriptor.
				if c := h.Model.Counters(); got != 8 || c.RxQueueFrames[0] != 8 || c.RxNoDescriptor != 12 {
					t.Fatalf("got %d, model queue 0 %d, dropped for want of a descriptor %d; want 8, 8, 12", got, c.RxQueueFrames[0], c.RxNoDescriptor)
				}
			}
			if err := h.nic.Unbind(0); err != nil {
				t.Fatal(err)
			}
			a.Account(t, rx)
		})
		t.Run(m.String()+"/rx ring full", func(t *testing.T) {
			h := newXDPHost(t)
			defer h.Finish(t)
			a := xskapp.New(t, 128, 128, 16)
			if err := h.nic.Bind(0, a.S, m); err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				h.peer.Send(xdpFrame(100, etherTypeLocal, i))
			}
			h.dma(0)
			a.S.Poll(64)
			st := &a.S.Stats
			if st.RxDelivered.Load() != 16 || st.RxRingFull.Load() != 24 || h.queueFrames(0) != 40 {
				t.Fatalf("delivered %d, ring full %d, model queue 0 %d; want 16, 24, 40", st.RxDelivered.Load(), st.RxRingFull.Load(), h.queueFrames(0))
			}
			// The application catches up and traffic flows again.
			held := a.RX(t)
			for i := range 8 {
				h.peer.Send(xdpFrame(100, etherTypeLocal, 100+i))
			}
			h.dma(0)
			a.S.Poll(64)
			more := a.RX(t)
			if len(more) != 8 {
				t.Fatalf("%d frames after the ring drained, want 8", len(more))
			}
			if err := h.nic.Unbind(0); err != nil {
				t.Fatal(err)
			}
			a.Account(t, append(held, more...))
		})
	}
}

func TestXDPProgramVerdicts(t *testing.T) {
	h := newXDPHost(t)
	defer h.Finish(t)
	// The first payload byte picks the verdict.
	prog := func(b []byte) xsk.Verdict { return xsk.Verdict(b[14] % 4) }
	if err := h.nic.SetProgram(0, prog); err != nil {
		t.Fatal(err)
	}
	if l, _ := h.nic.Layout(0); l != igc.Construct {
		t.Fatalf("with a program: layout %v, want construct", l)
	}
	var stack [][]byte
	deliver := func(p *nic.RxPacket) {
		stack = append(stack, p.Data.Flatten())
		p.Data.Release()
	}
	q := h.nic.Queues()[0]
	frame := func(i int) []byte {
		f := xdpFrame(80, etherTypeLocal, i)
		f[14] = byte(i)
		return f
	}
	for i := range 40 {
		h.peer.Send(frame(i))
	}
	h.dma(0)
	nictest.Receive(q, 64, deliver)
	nictest.Receive(q, 0, deliver) // rings the doorbell for the TX verdicts
	if len(stack) != 10 || h.peer.Len() != 10 {
		t.Fatalf("%d to the stack, %d sent back; want 10 each", len(stack), h.peer.Len())
	}
	for v := xsk.Pass; v <= xsk.Redirect; v++ {
		if n := h.Stat(t, "xdp_"+v.String()); n != 10 {
			t.Errorf("xdp_%v %d, want 10", v, n)
		}
	}
	if n := h.Stat(t, "xdp_redirect_no_socket"); n != 10 {
		t.Errorf("redirects with no socket %d, want 10", n)
	}
	for k, b := range stack {
		if !bytes.Equal(b, frame(4*k)) {
			t.Fatalf("passed frame %d wrong", k)
		}
	}

	// With a zero-copy socket bound the same program redirects into it,
	// and a passed frame reaches the stack as a copy of the socket's.
	a := xskapp.New(t, 128, 128, 64)
	if err := h.nic.Bind(0, a.S, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	stack = nil
	for i := range 40 {
		h.peer.Send(frame(i))
	}
	h.dma(0)
	nictest.Receive(q, 64, deliver)
	nictest.Receive(q, 0, deliver)
	rx := a.RX(t)
	if len(stack) != 10 || len(rx) != 10 || h.peer.Len() != 20 {
		t.Fatalf("%d to the stack, %d to the socket, %d sent back in all; want 10, 10, 20", len(stack), len(rx), h.peer.Len())
	}
	for k, d := range rx {
		if !bytes.Equal(a.S.Umem.Bytes(d.Addr, int(d.Len)), frame(4*k+3)) {
			t.Fatalf("redirected frame %d wrong", k)
		}
	}
	for k, b := range stack {
		if !bytes.Equal(b, frame(4*k)) {
			t.Fatalf("passed frame %d wrong", k)
		}
	}
	if err := h.nic.Unbind(0); err != nil {
		t.Fatal(err)
	}
	a.Account(t, rx)
	if err := h.nic.SetProgram(0, nil); err != nil {
		t.Fatal(err)
	}
	if l, _ := h.nic.Layout(0); l != igc.Build {
		t.Fatalf("program detached: layout %v, want build", l)
	}
}

func TestXDPBindErrors(t *testing.T) {
	h := newXDPHost(t)
	defer h.Finish(t)
	a := xskapp.New(t, 64, 0, 64)
	if err := h.nic.Bind(4, a.S, xsk.ZeroCopy); !errors.Is(err, xsk.ErrNoQueue) {
		t.Fatalf("bind queue 4: %v", err)
	}
	if err := h.nic.Bind(0, nil, xsk.ZeroCopy); err == nil {
		t.Fatal("bound a nil socket")
	}
	if err := h.nic.Unbind(1); err == nil {
		t.Fatal("unbound a queue with no socket")
	}
	if err := h.nic.Bind(1, a.S, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	b := xskapp.New(t, 64, 0, 64)
	if err := h.nic.Bind(1, b.S, xsk.Copy); !errors.Is(err, xsk.ErrBound) {
		t.Fatalf("second bind: %v", err)
	}
	if err := h.nic.Unbind(1); err != nil {
		t.Fatal(err)
	}
}

func TestXDPEtherTypeSteering(t *testing.T) {
	h := newXDPHost(t)
	defer h.Finish(t)
	if err := h.nic.Ctl("rss on"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.nic.Steer(xsk.Filter{EtherType: etherTypeLocal}, 4); !errors.Is(err, xsk.ErrNoQueue) {
		t.Fatalf("steer to queue 4: %v", err)
	}
	slot, err := h.nic.Steer(xsk.Filter{EtherType: etherTypeLocal}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.nic.Steer(xsk.Filter{EtherType: etherTypeLocal}, 1); err == nil {
		t.Fatal("one EtherType steered twice")
	}
	a := xskapp.New(t, 256, 256, 256)
	if err := h.nic.Bind(2, a.S, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	const frames = 100
	for i := range frames {
		h.peer.Send(xdpFrame(64, etherTypeLocal, i))
		h.peer.Send(xdpFrame(64, 0x0806, i)) // ARP: RSS has no hash for it, queue 0
	}
	h.dma(2)
	h.dma(0)
	a.S.Poll(2 * frames)
	got := a.RX(t)
	if len(got) != frames || h.queueFrames(2) != frames || h.queueFrames(0) != frames {
		t.Fatalf("socket got %d, model queue 2 %d, queue 0 %d; want %d each", len(got), h.queueFrames(2), h.queueFrames(0), frames)
	}
	for i, d := range got {
		if !bytes.Equal(a.S.Umem.Bytes(d.Addr, int(d.Len)), xdpFrame(64, etherTypeLocal, i)) {
			t.Fatalf("steered frame %d wrong", i)
		}
	}
	if err := h.nic.Unsteer(slot); err != nil {
		t.Fatal(err)
	}
	if err := h.nic.Unsteer(slot); err == nil {
		t.Fatal("unsteered a free slot")
	}
	h.peer.Send(xdpFrame(64, etherTypeLocal, 0))
	h.dma(2)
	h.dma(0)
	if h.queueFrames(2) != frames || h.queueFrames(0) != frames+1 {
		t.Fatalf("after unsteer: queue 2 %d, queue 0 %d", h.queueFrames(2), h.queueFrames(0))
	}
	// Eight filters, then a clear error.
	for i := range 8 {
		if _, err := h.nic.Steer(xsk.Filter{EtherType: 0x9000 + uint16(i)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.nic.Steer(xsk.Filter{EtherType: 0x9100}, 1); err == nil {
		t.Fatal("a ninth EtherType filter")
	}
	if err := h.nic.Unbind(2); err != nil {
		t.Fatal(err)
	}
	a.Account(t, got)
}

// udpTo is an IPv4 UDP frame to the host's port, seq in its payload.
func udpTo(port uint16, seq int) []byte {
	const n = 14 + 20 + 8 + 18
	f := make([]byte, n)
	copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 0x99, 0x08, 0x00})
	ip := header.IPv4(f[14:])
	ip.Encode(&header.IPv4Fields{
		TotalLength: n - 14, TTL: 64, Protocol: uint8(header.UDPProtocolNumber),
		SrcAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2}), DstAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 1}),
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	header.UDP(f[34:]).Encode(&header.UDPFields{SrcPort: uint16(40000 + seq%64), DstPort: port, Length: n - 34})
	binary.BigEndian.PutUint32(f[42:], uint32(seq))
	return f
}

func TestXDPUDPPortSteering(t *testing.T) {
	h := newXDPHost(t)
	defer h.Finish(t)
	const port = 4791
	slot, err := h.nic.Steer(xsk.Filter{UDPPort: port}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.nic.Steer(xsk.Filter{UDPPort: port}, 1); err == nil {
		t.Fatal("one port steered twice")
	}
	a := xskapp.New(t, 256, 256, 256)
	if err := h.nic.Bind(3, a.S, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	const frames = 100
	for i := range frames {
		h.peer.Send(udpTo(port, i))
		h.peer.Send(udpTo(port+1, i))
	}
	h.dma(3)
	h.dma(0)
	a.S.Poll(2 * frames)
	got := a.RX(t)
	if len(got) != frames || h.queueFrames(3) != frames || h.queueFrames(0) != frames {
		t.Fatalf("socket got %d; model queue 3 %d, queue 0 %d; want %d each", len(got), h.queueFrames(3), h.queueFrames(0), frames)
	}
	for i, d := range got {
		if !bytes.Equal(a.S.Umem.Bytes(d.Addr, int(d.Len)), udpTo(port, i)) {
			t.Fatalf("steered frame %d wrong", i)
		}
	}
	if err := h.nic.Unsteer(slot); err != nil {
		t.Fatal(err)
	}
	if err := h.nic.Unsteer(slot); err == nil {
		t.Fatal("unsteered a free slot")
	}
	for i := range 8 {
		if _, err := h.nic.Steer(xsk.Filter{UDPPort: uint16(5000 + i)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.nic.Steer(xsk.Filter{UDPPort: 6000}, 1); err == nil {
		t.Fatal("a ninth 2-tuple filter")
	}
	if err := h.nic.Unbind(3); err != nil {
		t.Fatal(err)
	}
	a.Account(t, got)
}

// TestXDPCloseWhileBound closes the device under a zero-copy socket with
// frames armed, received and in flight: the socket gets every frame back
// and nothing stays mapped (h.close checks the IOMMU and memory).
func TestXDPCloseWhileBound(t *testing.T) {
	h := newXDPHost(t)
	defer h.Finish(t)
	a := xskapp.New(t, 256, 128, 64)
	if err := h.nic.Bind(0, a.S, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		h.peer.Send(xdpFrame(100, etherTypeLocal, i))
	}
	h.dma(0)
	a.S.Poll(64)
	held := a.RX(t)
	for _, d := range held[:10] {
		a.S.TX.Produce(d) // sent back, some maybe still in flight at close
	}
	a.S.Poll(64)
	if err := h.nic.Close(); err != nil {
		t.Fatal(err)
	}
	if a.S.Poll(64) != 0 {
		t.Fatal("the socket still polls a closed device")
	}
	if n := a.S.TX.Len(); n != 0 {
		t.Fatalf("%d frames never taken from the TX ring", n)
	}
	a.Account(t, held[10:])
	if a.S.Stats.RxReturned.Load() == 0 {
		t.Fatal("no armed frame came back at close")
	}
}
