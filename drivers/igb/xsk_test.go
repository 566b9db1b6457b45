package igb

import (
	"bytes"

	"sync"
	"testing"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
)

var modes = []xsk.Mode{xsk.Copy, xsk.ZeroCopy}

// app is a test application: its socket and the frames it holds.
type app struct {
	s    *xsk.Socket
	free []uint64
}

func newApp(t testing.TB, frames, fill int) *app {
	t.Helper()
	u, err := xsk.NewUmem(xsk.UmemConfig{Frames: frames})
	if err != nil {
		t.Fatal(err)
	}
	s, err := xsk.NewSocket(u, 256)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{s: s}
	for i := 0; i < frames; i++ {
		a.free = append(a.free, u.Frame(i))
	}
	a.fill(fill)
	return a
}

// fill gives up to n free frames to the driver.
func (a *app) fill(n int) {
	n = min(n, len(a.free))
	k := a.s.Umem.Fill.ProduceBatch(a.free[:n])
	a.free = a.free[k:]
}

// rx takes the received frames, checking none repeats, and returns them.
func (a *app) rx(t testing.TB) []xsk.Desc {
	t.Helper()
	var out []xsk.Desc
	for {
		d, ok := a.s.RX.Consume()
		if !ok {
			return out
		}
		if err := a.s.Umem.Check(d.Addr, int(d.Len)); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
}

// complete takes finished frames back.
func (a *app) complete() int {
	n := 0
	for {
		f, ok := a.s.Umem.Comp.Consume()
		if !ok {
			return n
		}
		a.free = append(a.free, f)
		n++
	}
}

// account checks that every frame is in exactly one place once the queue
// is unbound: with the application, or on a ring it consumes.
func (a *app) account(t testing.TB, held []xsk.Desc) {
	t.Helper()
	seen := map[uint64]bool{}
	add := func(f uint64, where string) {
		if seen[f] {
			t.Fatalf("frame %#x twice (%s)", f, where)
		}
		seen[f] = true
	}
	for _, f := range a.free {
		add(f, "free")
	}
	for _, d := range held {
		add(d.Addr, "held")
	}
	for _, d := range a.rx(t) {
		add(d.Addr, "rx")
	}
	for {
		f, ok := a.s.Umem.Comp.Consume()
		if !ok {
			break
		}
		add(f, "completion")
	}
	for {
		f, ok := a.s.Umem.Fill.Consume()
		if !ok {
			break
		}
		add(f, "fill")
	}
	if len(seen) != a.s.Umem.Frames() {
		t.Fatalf("%d of %d frames accounted for", len(seen), a.s.Umem.Frames())
	}
}

func TestRxDropCountsExact(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			defer r.close(t)
			a := newApp(t, 512, 512)
			if err := r.d.Bind(1, a.s, m); err != nil {
				t.Fatal(err)
			}
			const frames = 2000
			got := 0
			maps0 := -1
			for sent := 0; sent < frames; {
				if maps0 < 0 && sent >= rxDescs {
					maps0, _, _ = r.dma.Counts() // every slot has been armed
				}
				for k := 0; k < 32 && sent < frames; k++ {
					if !r.deliver(t, 1, frame(60+sent%1400, byte(sent)), RXD_STAT_EOP, 0) {
						t.Fatalf("no armed descriptor at frame %d", sent)
					}
					sent++
				}
				a.s.Poll(64)
				for _, d := range a.rx(t) {
					if !bytes.Equal(a.s.Umem.Bytes(d.Addr, int(d.Len)), frame(60+got%1400, byte(got))) {
						t.Fatalf("frame %d corrupted", got)
					}
					got++
					a.free = append(a.free, d.Addr)
				}
				a.fill(len(a.free))
			}
			if got != frames || a.s.Stats.RxDelivered.Load() != frames || r.stat(t, "xdp_redirect") != frames {
				t.Fatalf("got %d, delivered %d, redirects %d, want %d", got, a.s.Stats.RxDelivered.Load(), r.stat(t, "xdp_redirect"), frames)
			}
			if maps, _, _ := r.dma.Counts(); maps != maps0 {
				t.Errorf("%d maps while receiving", maps-maps0)
			}
			if err := r.d.Unbind(1); err != nil {
				t.Fatal(err)
			}
			a.account(t, nil)
		})
	}
}

func TestTxPushCountsExact(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			defer r.close(t)
			a := newApp(t, 256, 64)
			if err := r.d.Bind(2, a.s, m); err != nil {
				t.Fatal(err)
			}
			const frames = 3000
			sent := 0
			for sent < frames || len(r.wire) < frames {
				for len(a.free) > 0 && sent < frames && a.s.TX.Free() > 0 {
					f := a.free[0]
					a.free = a.free[1:]
					b := frame(60+sent%1000, byte(sent))
					copy(a.s.Umem.Bytes(f, len(b)), b)
					a.s.TX.Produce(xsk.Desc{Addr: f, Len: uint32(len(b))})
					sent++
				}
				a.s.Poll(64)
				r.transmit(t, 2)
				a.s.Poll(64)
				a.complete()
			}
			for i, f := range r.wire {
				if !bytes.Equal(f, frame(60+i%1000, byte(i))) {
					t.Fatalf("wire frame %d wrong", i)
				}
			}
			if n := a.s.Stats.TxSent.Load(); n != frames {
				t.Errorf("TxSent %d", n)
			}
			bounced := r.stat(t, "tx_bounced")
			if m == xsk.ZeroCopy && bounced != 0 || m == xsk.Copy && bounced != frames {
				t.Errorf("%v: %d frames copied", m, bounced)
			}
			if err := r.d.Unbind(2); err != nil {
				t.Fatal(err)
			}
			a.account(t, nil)
		})
	}
}

func TestL2FwdCountsExact(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			defer r.close(t)
			a := newApp(t, 512, 256)
			if err := r.d.Bind(3, a.s, m); err != nil {
				t.Fatal(err)
			}
			const frames = 1500
			for sent := 0; sent < frames || len(r.wire) < frames; {
				for k := 0; k < 16 && sent < frames; k++ {
					if !r.deliver(t, 3, frame(100, byte(sent)), RXD_STAT_EOP, 0) {
						break
					}
					sent++
				}
				a.s.Poll(64)
				for _, d := range a.rx(t) {
					b := a.s.Umem.Bytes(d.Addr, int(d.Len))
					var tmp [6]byte
					copy(tmp[:], b[:6])
					copy(b[:6], b[6:12])
					copy(b[6:12], tmp[:])
					if !a.s.TX.Produce(d) {
						t.Fatal("tx ring full")
					}
				}
				a.s.Poll(64)
				r.transmit(t, 3)
				a.s.Poll(64)
				a.complete()
				a.fill(len(a.free))
			}
			for i, f := range r.wire {
				want := frame(100, byte(i))
				if !bytes.Equal(f[:6], want[6:12]) || !bytes.Equal(f[12:], want[12:]) {
					t.Fatalf("forwarded frame %d wrong", i)
				}
			}
			if len(r.wire) != frames || a.s.Stats.TxSent.Load() != frames {
				t.Fatalf("%d forwarded, TxSent %d", len(r.wire), a.s.Stats.TxSent.Load())
			}
			if err := r.d.Unbind(3); err != nil {
				t.Fatal(err)
			}
			a.account(t, nil)
		})
	}
}

// Unbinding with frames armed, received but not read, and in flight on
// the TX ring returns every one of them.
func TestUnbindUnderTraffic(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			a := newApp(t, 128, 100)
			if err := r.d.Bind(0, a.s, m); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 40; k++ {
				r.deliver(t, 0, frame(200, byte(k)), RXD_STAT_EOP, 0)
			}
			a.s.Poll(64)
			var held []xsk.Desc // 20 taken, the rest stays on the RX ring
			for len(held) < 20 {
				d, ok := a.s.RX.Consume()
				if !ok {
					t.Fatalf("only %d frames received", len(held))
				}
				held = append(held, d)
			}
			for _, d := range held[:10] {
				a.s.TX.Produce(d) // sent, never completed by the device
			}
			held = held[10:]
			a.s.Poll(64)
			if err := r.d.Unbind(0); err != nil {
				t.Fatal(err)
			}
			a.account(t, held)
			if m == xsk.ZeroCopy && a.s.Stats.TxAborted.Load() != 10 {
				t.Errorf("TxAborted %d", a.s.Stats.TxAborted.Load())
			}
			// The queue is the stack's again (a zero-copy queue restarted
			// from descriptor 0 with pages).
			if m == xsk.ZeroCopy {
				r.rxHead[0] = 0
			}
			r.deliver(t, 0, frame(300, 7), RXD_STAT_EOP, 0)
			n := 0
			r.d.queues[0].Poll(8, func(p *nic.RxPacket) { n++; p.Data.Release() })
			if n != 1 {
				t.Errorf("stack got %d frames after unbind", n)
			}
			r.close(t)
		})
	}
}

// A full RX ring or an empty fill ring costs frames, each counted.
func TestFillEmptyAndRxFull(t *testing.T) {
	r := newRig(t)
	defer r.close(t)
	a := newApp(t, 64, 10)
	if err := r.d.Bind(1, a.s, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	n := 0
	for r.deliver(t, 1, frame(80, byte(n)), RXD_STAT_EOP, 0) {
		n++
	}
	if n != 10 {
		t.Fatalf("device found %d armed frames, want the 10 filled", n)
	}
	a.s.Poll(64)
	if got := len(a.rx(t)); got != 10 || r.stat(t, "rx_frames") != 10 {
		t.Fatalf("received %d, rx_frames %d", got, r.stat(t, "rx_frames"))
	}
	r.d.Unbind(1)

	// Copy mode: frames arrive in driver buffers; with no fill frames
	// they are dropped and counted.
	b := newApp(t, 64, 5)
	if err := r.d.Bind(1, b.s, xsk.Copy); err != nil {
		t.Fatal(err)
	}
	r.rxHead[1] = 0
	for k := 0; k < 12; k++ {
		r.deliver(t, 1, frame(80, byte(k)), RXD_STAT_EOP, 0)
	}
	b.s.Poll(64)
	if d, e := b.s.Stats.RxDelivered.Load(), b.s.Stats.RxFillEmpty.Load(); d != 5 || e != 7 {
		t.Errorf("delivered %d, fill empty %d", d, e)
	}
	r.d.Unbind(1)
}

func TestProgramVerdicts(t *testing.T) {
	r := newRig(t)
	defer r.close(t)
	a := newApp(t, 64, 64)
	if err := r.d.Bind(1, a.s, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	verdicts := []xsk.Verdict{xsk.Pass, xsk.Drop, xsk.Tx, xsk.Redirect}
	r.d.SetProgram(1, func(f []byte) xsk.Verdict { return verdicts[int(f[14]-14)%4] })
	var passed []*nic.RxPacket
	for k := 0; k < 40; k++ {
		r.deliver(t, 1, frame(70, byte(k)), RXD_STAT_EOP, 0)
	}
	r.d.queues[1].Poll(64, func(p *nic.RxPacket) { passed = append(passed, p) })
	r.transmit(t, 1)
	if len(passed) != 10 || len(a.rx(t)) != 10 || len(r.wire) != 10 {
		t.Fatalf("pass %d, redirect %d, tx %d", len(passed), len(a.rx(t)), len(r.wire))
	}
	for _, v := range verdicts {
		if n := r.stat(t, "xdp_"+v.String()); n != 10 {
			t.Errorf("xdp_%v %d", v, n)
		}
	}
	for _, p := range passed {
		p.Data.Release()
	}
	if err := r.d.Bind(1, a.s, xsk.Copy); err == nil {
		t.Error("second bind accepted")
	}
	if err := r.d.Unbind(1); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Unbind(1); err == nil {
		t.Error("second unbind accepted")
	}
}

// An application polls its queue in one goroutine while another unbinds
// and closes: no race, no leak (run with -race).
func TestUnbindWhilePolling(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			a := newApp(t, 256, 200)
			if err := r.d.Bind(0, a.s, m); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 100; k++ {
				r.deliver(t, 0, frame(90, byte(k)), RXD_STAT_EOP, 0)
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					a.s.Poll(8)
					for {
						d, ok := a.s.RX.Consume()
						if !ok {
							break
						}
						a.s.TX.Produce(d)
					}
				}
			}()
			for a.s.Stats.RxDelivered.Load() < 50 {
			}
			if err := r.d.Unbind(0); err != nil {
				t.Error(err)
			}
			close(stop)
			wg.Wait()
			r.close(t)
		})
	}
}
