package igb

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/internal/xskapp"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
)

func TestRxDropCountsExact(t *testing.T) {
	for _, m := range xskapp.Modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			defer r.Close(t)
			a := xskapp.New(t, 512, 512, 256)
			if err := r.d.Bind(1, a.S, m); err != nil {
				t.Fatal(err)
			}
			const frames = 2000
			got := 0
			maps0 := -1
			for sent := 0; sent < frames; {
				if maps0 < 0 && sent >= rxDescs {
					maps0, _, _ = r.DMA.Counts() // every slot has been armed
				}
				for k := 0; k < 32 && sent < frames; k++ {
					if !r.Deliver(t, 1, frame(60+sent%1400, byte(sent)), RXD_STAT_EOP, 0) {
						t.Fatalf("no armed descriptor at frame %d", sent)
					}
					sent++
				}
				a.S.Poll(64)
				for _, d := range a.RX(t) {
					if !bytes.Equal(a.S.Umem.Bytes(d.Addr, int(d.Len)), frame(60+got%1400, byte(got))) {
						t.Fatalf("frame %d corrupted", got)
					}
					got++
					a.Free = append(a.Free, d.Addr)
				}
				a.Fill(len(a.Free))
			}
			if got != frames || a.S.Stats.RxDelivered.Load() != frames || r.Stat(t, "xdp_redirect") != frames {
				t.Fatalf("got %d, delivered %d, redirects %d, want %d", got, a.S.Stats.RxDelivered.Load(), r.Stat(t, "xdp_redirect"), frames)
			}
			if maps, _, _ := r.DMA.Counts(); maps != maps0 {
				t.Errorf("%d maps while receiving", maps-maps0)
			}
			if err := r.d.Unbind(1); err != nil {
				t.Fatal(err)
			}
			a.Account(t, nil)
		})
	}
}

func TestTxPushCountsExact(t *testing.T) {
	for _, m := range xskapp.Modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			defer r.Close(t)
			a := xskapp.New(t, 256, 64, 256)
			if err := r.d.Bind(2, a.S, m); err != nil {
				t.Fatal(err)
			}
			const frames = 3000
			sent := 0
			for sent < frames || len(r.Wire) < frames {
				for len(a.Free) > 0 && sent < frames && a.S.TX.Free() > 0 {
					f := a.Free[0]
					a.Free = a.Free[1:]
					b := frame(60+sent%1000, byte(sent))
					copy(a.S.Umem.Bytes(f, len(b)), b)
					a.S.TX.Produce(xsk.Desc{Addr: f, Len: uint32(len(b))})
					sent++
				}
				a.S.Poll(64)
				r.Transmit(t, 2)
				a.S.Poll(64)
				a.Complete()
			}
			for i, f := range r.Wire {
				if !bytes.Equal(f, frame(60+i%1000, byte(i))) {
					t.Fatalf("wire frame %d wrong", i)
				}
			}
			if n := a.S.Stats.TxSent.Load(); n != frames {
				t.Errorf("TxSent %d", n)
			}
			bounced := r.Stat(t, "tx_bounced")
			if m == xsk.ZeroCopy && bounced != 0 || m == xsk.Copy && bounced != frames {
				t.Errorf("%v: %d frames copied", m, bounced)
			}
			if err := r.d.Unbind(2); err != nil {
				t.Fatal(err)
			}
			a.Account(t, nil)
		})
	}
}

func TestL2FwdCountsExact(t *testing.T) {
	for _, m := range xskapp.Modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			defer r.Close(t)
			a := xskapp.New(t, 512, 256, 256)
			if err := r.d.Bind(3, a.S, m); err != nil {
				t.Fatal(err)
			}
			const frames = 1500
			for sent := 0; sent < frames || len(r.Wire) < frames; {
				for k := 0; k < 16 && sent < frames; k++ {
					if !r.Deliver(t, 3, frame(100, byte(sent)), RXD_STAT_EOP, 0) {
						break
					}
					sent++
				}
				a.S.Poll(64)
				for _, d := range a.RX(t) {
					b := a.S.Umem.Bytes(d.Addr, int(d.Len))
					var tmp [6]byte
					copy(tmp[:], b[:6])
					copy(b[:6], b[6:12])
					copy(b[6:12], tmp[:])
					if !a.S.TX.Produce(d) {
						t.Fatal("tx ring full")
					}
				}
				a.S.Poll(64)
				r.Transmit(t, 3)
				a.S.Poll(64)
				a.Complete()
				a.Fill(len(a.Free))
			}
			for i, f := range r.Wire {
				want := frame(100, byte(i))
				if !bytes.Equal(f[:6], want[6:12]) || !bytes.Equal(f[12:], want[12:]) {
					t.Fatalf("forwarded frame %d wrong", i)
				}
			}
			if len(r.Wire) != frames || a.S.Stats.TxSent.Load() != frames {
				t.Fatalf("%d forwarded, TxSent %d", len(r.Wire), a.S.Stats.TxSent.Load())
			}
			if err := r.d.Unbind(3); err != nil {
				t.Fatal(err)
			}
			a.Account(t, nil)
		})
	}
}

// Unbinding with frames armed, received but not read, and in flight on
// the TX ring returns every one of them.
func TestUnbindUnderTraffic(t *testing.T) {
	for _, m := range xskapp.Modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			a := xskapp.New(t, 128, 100, 256)
			if err := r.d.Bind(0, a.S, m); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 40; k++ {
				r.Deliver(t, 0, frame(200, byte(k)), RXD_STAT_EOP, 0)
			}
			a.S.Poll(64)
			var held []xsk.Desc // 20 taken, the rest stays on the RX ring
			for len(held) < 20 {
				d, ok := a.S.RX.Consume()
				if !ok {
					t.Fatalf("only %d frames received", len(held))
				}
				held = append(held, d)
			}
			for _, d := range held[:10] {
				a.S.TX.Produce(d) // sent, never completed by the device
			}
			held = held[10:]
			a.S.Poll(64)
			if err := r.d.Unbind(0); err != nil {
				t.Fatal(err)
			}
			a.Account(t, held)
			if m == xsk.ZeroCopy && a.S.Stats.TxAborted.Load() != 10 {
				t.Errorf("TxAborted %d", a.S.Stats.TxAborted.Load())
			}
			// The queue is the stack's again (a zero-copy queue restarted
			// from descriptor 0 with pages).
			if m == xsk.ZeroCopy {
				r.RxHead[0] = 0
			}
			r.Deliver(t, 0, frame(300, 7), RXD_STAT_EOP, 0)
			n := 0
			nictest.Receive(r.d.queues[0], 8, func(p *nic.RxPacket) { n++; p.Data.Release() })
			if n != 1 {
				t.Errorf("stack got %d frames after unbind", n)
			}
			r.Close(t)
		})
	}
}

// A full RX ring or an empty fill ring costs frames, each counted.
func TestFillEmptyAndRxFull(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	a := xskapp.New(t, 64, 10, 256)
	if err := r.d.Bind(1, a.S, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	n := 0
	for r.Deliver(t, 1, frame(80, byte(n)), RXD_STAT_EOP, 0) {
		n++
	}
	if n != 10 {
		t.Fatalf("device found %d armed frames, want the 10 filled", n)
	}
	a.S.Poll(64)
	if got := len(a.RX(t)); got != 10 || r.Stat(t, "rx_frames") != 10 {
		t.Fatalf("received %d, rx_frames %d", got, r.Stat(t, "rx_frames"))
	}
	r.d.Unbind(1)

	// Copy mode: frames arrive in driver buffers; with no fill frames
	// they are dropped and counted.
	b := xskapp.New(t, 64, 5, 256)
	if err := r.d.Bind(1, b.S, xsk.Copy); err != nil {
		t.Fatal(err)
	}
	r.RxHead[1] = 0
	for k := 0; k < 12; k++ {
		r.Deliver(t, 1, frame(80, byte(k)), RXD_STAT_EOP, 0)
	}
	b.S.Poll(64)
	if d, e := b.S.Stats.RxDelivered.Load(), b.S.Stats.RxFillEmpty.Load(); d != 5 || e != 7 {
		t.Errorf("delivered %d, fill empty %d", d, e)
	}
	r.d.Unbind(1)
}

func TestProgramVerdicts(t *testing.T) {
	r := newRig(t)
	defer r.Close(t)
	a := xskapp.New(t, 64, 64, 256)
	if err := r.d.Bind(1, a.S, xsk.ZeroCopy); err != nil {
		t.Fatal(err)
	}
	verdicts := []xsk.Verdict{xsk.Pass, xsk.Drop, xsk.Tx, xsk.Redirect}
	r.d.SetProgram(1, func(f []byte) xsk.Verdict { return verdicts[int(f[14]-14)%4] })
	var passed []*nic.RxPacket
	for k := 0; k < 40; k++ {
		r.Deliver(t, 1, frame(70, byte(k)), RXD_STAT_EOP, 0)
	}
	nictest.Receive(r.d.queues[1], 64, func(p *nic.RxPacket) { passed = append(passed, p) })
	r.Transmit(t, 1)
	if len(passed) != 10 || len(a.RX(t)) != 10 || len(r.Wire) != 10 {
		t.Fatalf("pass %d, redirect %d, tx %d", len(passed), len(a.RX(t)), len(r.Wire))
	}
	for _, v := range verdicts {
		if n := r.Stat(t, "xdp_"+v.String()); n != 10 {
			t.Errorf("xdp_%v %d", v, n)
		}
	}
	for _, p := range passed {
		p.Data.Release()
	}
	if err := r.d.Bind(1, a.S, xsk.Copy); err == nil {
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
	for _, m := range xskapp.Modes {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t)
			a := xskapp.New(t, 256, 200, 256)
			if err := r.d.Bind(0, a.S, m); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 100; k++ {
				r.Deliver(t, 0, frame(90, byte(k)), RXD_STAT_EOP, 0)
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
					a.S.Poll(8)
					for {
						d, ok := a.S.RX.Consume()
						if !ok {
							break
						}
						a.S.TX.Produce(d)
					}
				}
			}()
			// No progress for 10 s fails with the socket's counters
			// instead of spinning until the test binary's timeout.
			for last, since := uint64(0), time.Now(); a.S.Stats.RxDelivered.Load() < 50; runtime.Gosched() {
				if n := a.S.Stats.RxDelivered.Load(); n != last {
					last, since = n, time.Now()
				} else if time.Since(since) > 10*time.Second {
					close(stop)
					wg.Wait()
					st := &a.S.Stats
					t.Fatalf("forwarding stopped at %d of 50 frames: sent %d, aborted %d, returned %d", n, st.TxSent.Load(), st.TxAborted.Load(), st.RxReturned.Load())
				}
			}
			if err := r.d.Unbind(0); err != nil {
				t.Error(err)
			}
			close(stop)
			wg.Wait()
			r.Close(t)
		})
	}
}
