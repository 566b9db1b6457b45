package xsk_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/internal/xskapp"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/xsk"
	"github.com/ether9/ether9/kernel"
)

// fakeNIC is a driver whose device the test plays: RX descriptors hold
// the buffer addresses the queue armed, TX descriptors the frames it
// queued, and the test completes them.
type fakeNIC struct {
	t   *testing.T
	dma *fakedev.DMA
	x   *xsk.Queue

	rx       []kernel.DMAAddr // armed buffer per RX descriptor
	rxDone   []int            // completed RX descriptors' lengths, in order from Clean
	tx       []txDesc
	txNext   int
	txUsed   int
	copies   [][]byte
	calls    map[string]int
	rxOn     bool
	txOn     bool
	released bool
}

type txDesc struct {
	addr kernel.DMAAddr
	n    int
	done bool
	busy bool
}

func newFake(t *testing.T, rxN, txN int) *fakeNIC {
	f := &fakeNIC{t: t, dma: fakedev.NewDMA(), rx: make([]kernel.DMAAddr, rxN), tx: make([]txDesc, txN), calls: map[string]int{}, rxOn: true, txOn: true}
	x, err := xsk.NewQueue(f, f.dma, xsk.QueueConfig{RxDescs: rxN, TxDescs: txN, MaxTx: 2048})
	if err != nil {
		t.Fatal(err)
	}
	f.x = x
	return f
}

func (f *fakeNIC) StopRx() error    { f.calls["StopRx"]++; f.rxOn = false; return nil }
func (f *fakeNIC) ReleaseRx() error { f.calls["ReleaseRx"]++; f.released = true; return nil }
func (f *fakeNIC) StopTx() error    { f.calls["StopTx"]++; f.txOn = false; return nil }

func (f *fakeNIC) StartRx() error {
	f.calls["StartRx"]++
	f.rxOn = true
	clear(f.rx)
	f.rxDone = nil
	if f.x.ZeroCopy() {
		f.x.Reset()
		f.x.Refill()
	}
	return nil
}

func (f *fakeNIC) StartTx() error {
	f.calls["StartTx"]++
	f.txOn = true
	clear(f.tx)
	f.txNext, f.txUsed = 0, 0
	return nil
}

func (f *fakeNIC) WriteRx(i int, addr kernel.DMAAddr) { f.rx[i] = addr }

func (f *fakeNIC) WriteTx(addr kernel.DMAAddr, n int) (int, bool) {
	if f.TxFree() == 0 {
		return 0, false
	}
	i := f.txNext
	f.tx[i] = txDesc{addr: addr, n: n, busy: true}
	f.txNext = (i + 1) % len(f.tx)
	f.txUsed++
	return i, true
}

func (f *fakeNIC) SendCopy(b []byte) bool {
	f.copies = append(f.copies, bytes.Clone(b))
	return true
}

func (f *fakeNIC) TxFree() int { return len(f.tx) - 1 - f.txUsed }

// ReclaimTx completes the descriptors the device marked done, in ring order.
func (f *fakeNIC) ReclaimTx() {
	for f.txUsed > 0 {
		i := (f.txNext - f.txUsed + len(f.tx)) % len(f.tx)
		if !f.tx[i].done {
			return
		}
		f.tx[i] = txDesc{}
		f.txUsed--
		f.x.Complete(i)
	}
}

func (f *fakeNIC) WaitFor(_ time.Duration, cond func() bool) bool {
	for range 10 {
		if cond() {
			return true
		}
	}
	return false
}

func (f *fakeNIC) Wait(time.Duration) bool { return false }

// Receive is the driver's loop: completed RX descriptors through the
// program, then the socket's sends and completions. No frame is passed
// up: the frames stay the socket's.
func (f *fakeNIC) Receive(pkts []nic.RxPacket) (int, int) {
	n, budget := 0, len(pkts)
	prog := f.x.Program()
	for n < budget && len(f.rxDone) > 0 && f.x.Armed() > 0 {
		if _, _, err := f.x.RunZC(prog, f.rxDone[0]); err != nil {
			f.t.Error(err)
		}
		f.rxDone = f.rxDone[1:]
		f.x.Advance()
		n++
	}
	f.x.Refill()
	f.x.Send(budget)
	f.ReclaimTx()
	return 0, n
}

// receive plays the device writing frame b into the buffer at Clean+k.
func (f *fakeNIC) receive(k int, b []byte) {
	i := (f.x.Clean() + k) % len(f.rx)
	if err := f.dma.DeviceWrite(f.rx[i], b); err != nil {
		f.t.Fatal(err)
	}
	f.rxDone = append(f.rxDone, len(b))
}

func TestQueueZeroCopy(t *testing.T) {
	f := newFake(t, 8, 8)
	app := xskapp.New(t, 32, 16, 16)
	s, free := app.S, app.Free
	if err := f.x.Bind(s, xsk.ZeroCopy, 1518); err != nil {
		t.Fatal(err)
	}
	if !f.released || f.calls["StopRx"] != 1 || f.calls["StartRx"] != 1 || f.dma.Maps != 1 {
		t.Fatalf("bind: released %v, calls %v, %d maps", f.released, f.calls, f.dma.Maps)
	}
	if f.x.Armed() != 7 {
		t.Fatalf("%d descriptors armed, want 7 (one stays free)", f.x.Armed())
	}
	for k := range 3 {
		f.receive(k, bytes.Repeat([]byte{byte(k + 1)}, 60+k))
	}
	if n := s.Poll(64); n != 3 {
		t.Fatalf("poll took %d, want 3", n)
	}
	for k := range 3 {
		d, ok := s.RX.Consume()
		if !ok || int(d.Len) != 60+k || !bytes.Equal(s.Umem.Bytes(d.Addr, int(d.Len)), bytes.Repeat([]byte{byte(k + 1)}, 60+k)) {
			t.Fatalf("frame %d: %+v", k, d)
		}
		free = append(free, d.Addr)
	}
	if f.x.Armed() != 7 || f.dma.Maps != 1 {
		t.Fatalf("after refill: %d armed, %d maps", f.x.Armed(), f.dma.Maps)
	}
	// Two sends straight out of the area.
	for _, a := range free[:2] {
		copy(s.Umem.Bytes(a, 64), bytes.Repeat([]byte{0xee}, 64))
		s.TX.Produce(xsk.Desc{Addr: a, Len: 64})
	}
	s.Poll(64)
	if f.txUsed != 2 || len(f.copies) != 0 || f.x.InFlight() != 2 {
		t.Fatalf("%d on the TX ring, %d copied, %d in flight", f.txUsed, len(f.copies), f.x.InFlight())
	}
	for i := range 2 {
		b := make([]byte, 64)
		if err := f.dma.DeviceRead(f.tx[i].addr, b); err != nil || b[0] != 0xee || f.tx[i].n != 64 {
			t.Fatalf("device read of TX frame %d: %v", i, err)
		}
	}
	f.tx[0].done = true
	s.Poll(64)
	if a, ok := s.Umem.Comp.Consume(); !ok || a != free[0] || s.Stats.TxSent.Load() != 1 {
		t.Fatalf("completion %#x %v, sent %d", a, ok, s.Stats.TxSent.Load())
	}
	// Unbind with one send the device never finishes: it comes back
	// aborted, the armed frames come back, the area is unmapped.
	if err := f.x.Unbind(true); err != nil {
		t.Fatal(err)
	}
	if f.calls["StopTx"] != 1 || f.calls["StartTx"] != 1 || f.calls["StartRx"] != 2 || f.x.ZeroCopy() || f.x.Socket() != nil {
		t.Fatalf("unbind: calls %v", f.calls)
	}
	if s.Stats.TxAborted.Load() != 1 || s.Stats.RxReturned.Load() != 7 || f.dma.Live() != 0 {
		t.Fatalf("aborted %d, returned %d, %d mappings live", s.Stats.TxAborted.Load(), s.Stats.RxReturned.Load(), f.dma.Live())
	}
	// Every frame is somewhere the application can see.
	seen := map[uint64]bool{free[0]: true} // taken back from its completion above
	for _, a := range free[2:] {
		seen[a] = true
	}
	for {
		a, ok := s.Umem.Comp.Consume()
		if !ok {
			break
		}
		seen[a] = true
	}
	for {
		a, ok := s.Umem.Fill.Consume()
		if !ok {
			break
		}
		seen[a] = true
	}
	if len(seen) != 32 {
		t.Fatalf("%d of 32 frames accounted for", len(seen))
	}
	if s.Poll(1) != 0 {
		t.Fatal("an unbound socket still polls")
	}
}

func TestQueueCopyMode(t *testing.T) {
	f := newFake(t, 8, 8)
	frame := bytes.Repeat([]byte{7}, 100)
	if v := f.x.Run(xsk.RedirectAll, frame); v != xsk.Redirect || f.x.NoSocket.Load() != 1 {
		t.Fatalf("redirect with no socket: %v, %d", v, f.x.NoSocket.Load())
	}
	s := xskapp.New(t, 32, 2, 16).S
	if err := f.x.Bind(s, xsk.Copy, 1518); err != nil {
		t.Fatal(err)
	}
	if f.dma.Maps != 0 || f.released || f.x.ZeroCopy() {
		t.Fatal("copy mode mapped the area or took the ring")
	}
	prog := f.x.Program()
	for range 3 {
		f.x.Run(prog, frame)
	}
	if s.Stats.RxDelivered.Load() != 2 || s.Stats.RxFillEmpty.Load() != 1 || f.x.Verdicts[xsk.Redirect].Load() != 4 {
		t.Fatalf("delivered %d, fill empty %d, redirects %d", s.Stats.RxDelivered.Load(), s.Stats.RxFillEmpty.Load(), f.x.Verdicts[xsk.Redirect].Load())
	}
	d, _ := s.RX.Consume()
	if !bytes.Equal(s.Umem.Bytes(d.Addr, int(d.Len)), frame) {
		t.Fatal("copied frame differs")
	}
	// A frame outside the area is refused and given back.
	s.TX.Produce(xsk.Desc{Addr: 1 << 30, Len: 64})
	s.TX.Produce(xsk.Desc{Addr: d.Addr, Len: 64})
	f.x.Send(8)
	if s.Stats.TxInvalid.Load() != 1 || s.Stats.TxSent.Load() != 1 || len(f.copies) != 1 || s.Umem.Comp.Len() != 2 {
		t.Fatalf("invalid %d, sent %d, copies %d, completions %d", s.Stats.TxInvalid.Load(), s.Stats.TxSent.Load(), len(f.copies), s.Umem.Comp.Len())
	}
	if err := f.x.Unbind(true); err != nil {
		t.Fatal(err)
	}
	if f.calls["StartRx"] != 0 || f.calls["StartTx"] != 0 {
		t.Fatalf("copy-mode unbind restarted rings: %v", f.calls)
	}
}

func TestQueueBindChecks(t *testing.T) {
	f := newFake(t, 8, 8)
	s := xskapp.New(t, 8, 0, 16).S
	if err := f.x.Bind(nil, xsk.ZeroCopy, 1518); err == nil {
		t.Fatal("bound no socket")
	}
	if err := f.x.Bind(s, xsk.ZeroCopy, 3000); err == nil {
		t.Fatal("bound 2 KiB frames for 3000-byte frames")
	}
	if f.dma.Maps != 0 || f.calls["StopRx"] != 0 {
		t.Fatal("a refused bind touched the device")
	}
	if err := f.x.Bind(s, xsk.ZeroCopy, 1518); err != nil {
		t.Fatal(err)
	}
	if err := f.x.Bind(s, xsk.Copy, 1518); !errors.Is(err, xsk.ErrBound) {
		t.Fatalf("second bind: %v", err)
	}
	if err := f.x.Unbind(false); err != nil {
		t.Fatal(err)
	}
	if f.calls["StartRx"] != 1 || f.dma.Live() != 0 {
		t.Fatalf("unbind without restart: calls %v, %d live", f.calls, f.dma.Live())
	}
	if err := f.x.Unbind(false); err != nil {
		t.Fatalf("unbinding an unbound queue: %v", err)
	}
	if _, err := xsk.NewQueue(f, f.dma, xsk.QueueConfig{RxDescs: 1, TxDescs: 8, MaxTx: 2048}); err == nil {
		t.Fatal("a one-descriptor ring")
	}
}
