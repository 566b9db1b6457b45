package ring

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

const bufSize = 2048

func newRx(t *testing.T, dma *fakedev.DMA, n int) (*RxRing, map[int]kernel.DMAAddr) {
	t.Helper()
	r, err := NewRxRing(dma, n, 16, bufSize)
	if err != nil {
		t.Fatal(err)
	}
	armed := map[int]kernel.DMAAddr{}
	r.Refill(func(i int, a kernel.DMAAddr) { armed[i] = a })
	return r, armed
}

// warm cycles one descriptor so that every slot holds a buffer: from then
// on a refill only re-arms recycled buffers.
func warm(t *testing.T, r *RxRing, armed map[int]kernel.DMAAddr) {
	t.Helper()
	r.Drop(DropErrorBits)
	r.Advance()
	r.Refill(func(i int, a kernel.DMAAddr) { armed[i] = a })
	r.Stats = RxStats{}
}

// deliver plays the device: it writes payload into the buffer armed at the
// ring's clean index.
func deliver(t *testing.T, dma *fakedev.DMA, addr kernel.DMAAddr, payload []byte) {
	t.Helper()
	if err := dma.DeviceWrite(addr, payload); err != nil {
		t.Fatal(err)
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func TestNewDescsRejectsBadGeometry(t *testing.T) {
	dma := fakedev.NewDMA()
	for _, c := range []struct{ n, size int }{{0, 16}, {4, 16}, {9, 16}, {8, 0}} {
		if _, err := NewDescs(dma, c.n, c.size); err == nil {
			t.Errorf("NewDescs(%d, %d) accepted", c.n, c.size)
		}
	}
	d, err := NewDescs(dma, 8, 16)
	if err != nil {
		t.Fatal(err)
	}
	if d.Bytes() != 128 || d.Next(7) != 0 || d.Next(3) != 4 {
		t.Errorf("geometry: bytes %d next(7) %d", d.Bytes(), d.Next(7))
	}
}

func TestRefillKeepsOneSlotEmpty(t *testing.T) {
	dma := fakedev.NewDMA()
	r, armed := newRx(t, dma, 16)
	if len(armed) != 15 || r.Armed() != 15 || r.Tail() != 15 {
		t.Fatalf("armed %d (ring says %d), tail %d; want 15", len(armed), r.Armed(), r.Tail())
	}
	if dma.Live() != 15 || r.Mapped() != 15 {
		t.Fatalf("live mappings %d, ring mapped %d; want 15", dma.Live(), r.Mapped())
	}
	if r.Refill(func(int, kernel.DMAAddr) { t.Fatal("armed a full ring") }) {
		t.Fatal("refill of a full ring moved the tail")
	}
}

func TestCopybreakBoundaries(t *testing.T) {
	for _, cb := range []int{0, 256, 2048} {
		for _, n := range []int{60, cb - 1, cb, cb + 1, 1514} {
			if n <= 0 || n > bufSize {
				continue
			}
			for _, mode := range []Mode{SyncNoUnmap, UnmapAlways} {
				dma := fakedev.NewDMA()
				r, armed := newRx(t, dma, 8)
				warm(t, r, armed)
				r.SetCopybreak(cb)
				r.SetMode(mode)
				want := pattern(n, byte(n))
				addr := armed[r.Clean()]
				deliver(t, dma, addr, want)
				maps0, unmaps0, _ := dma.Counts()
				got, path, err := r.Receive(n)
				if err != nil {
					t.Fatalf("cb %d n %d %v: %v", cb, n, mode, err)
				}
				r.Advance()
				_, unmaps, _ := dma.Counts()
				// Drop the next frame so the tail passes the slot just
				// used: the re-arm of slot 0 (warmed) and slot 1 (used).
				r.Drop(DropErrorBits)
				r.Advance()
				r.Refill(func(int, kernel.DMAAddr) {})
				maps, _, _ := dma.Counts()
				wantPath := Handoff
				if n < cb {
					wantPath = Copied
				}
				if path != wantPath {
					t.Errorf("cb %d n %d %v: path %v, want %v", cb, n, mode, path, wantPath)
				}
				if !bytes.Equal(got.Flatten(), want) {
					t.Errorf("cb %d n %d %v: payload differs", cb, n, mode)
				}
				dm, du := maps-maps0, unmaps-unmaps0
				wantMaps, wantUnmaps := 1, 1 // sync mode, handoff: only the used buffer
				switch {
				case mode == UnmapAlways:
					// Copied or not, the buffer was unmapped and re-mapped.
				case path == Copied:
					wantMaps, wantUnmaps = 0, 0
				}
				if dm != wantMaps || du != wantUnmaps {
					t.Errorf("cb %d n %d %v %v: %d maps %d unmaps, want %d/%d", cb, n, mode, path, dm, du, wantMaps, wantUnmaps)
				}
				if path == Copied && r.Stats.Copybreak.Load() != 1 {
					t.Errorf("copybreak counter %d", r.Stats.Copybreak.Load())
				}
				if path == Handoff && r.Stats.Handoffs.Load() != 1 {
					t.Errorf("handoff counter %d", r.Stats.Handoffs.Load())
				}
				got.Release()
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				if dma.Live() != 0 {
					t.Errorf("cb %d n %d %v: %d mappings leaked", cb, n, mode, dma.Live())
				}
			}
		}
	}
}

func TestHandoffIsZeroCopy(t *testing.T) {
	dma := fakedev.NewDMA()
	r, armed := newRx(t, dma, 8)
	deliver(t, dma, armed[0], pattern(1000, 3))
	got, path, err := r.Receive(1000)
	if err != nil || path != Handoff {
		t.Fatalf("path %v err %v", path, err)
	}
	// The device wrote into the very bytes the stack now holds: a device
	// write through the old address is impossible because it is unmapped.
	if err := dma.DeviceWrite(armed[0], []byte{1}); !errors.Is(err, kernel.ErrNotMapped) {
		t.Errorf("old buffer still reachable by the device: %v", err)
	}
	if got.Size() != 1000 {
		t.Errorf("size %d", got.Size())
	}
	got.Release()
	r.Advance()
	r.Close()
}

func TestDropRecyclesWithoutUnmap(t *testing.T) {
	dma := fakedev.NewDMA()
	r, armed := newRx(t, dma, 8)
	warm(t, r, armed)
	a := armed[1]
	maps0, unmaps0, _ := dma.Counts()
	r.Drop(DropErrorBits)
	r.Advance()
	if _, _, err := r.Receive(0); err == nil {
		t.Error("zero length accepted")
	}
	r.Advance()
	if _, _, err := r.Receive(bufSize + 1); err == nil {
		t.Error("oversized length accepted")
	}
	r.Advance()
	var rearmed []kernel.DMAAddr
	r.Refill(func(i int, addr kernel.DMAAddr) { rearmed = append(rearmed, addr) })
	maps, unmaps, _ := dma.Counts()
	if maps != maps0 || unmaps != unmaps0 {
		t.Errorf("drops cost %d maps, %d unmaps", maps-maps0, unmaps-unmaps0)
	}
	if len(rearmed) != 3 || rearmed[1] != a {
		t.Errorf("re-armed %v, want 3 starting with %#x", rearmed, a)
	}
	if r.Stats.Drops[DropErrorBits].Load() != 1 || r.Stats.Drops[DropLength].Load() != 2 || r.Stats.Recycled.Load() != 3 {
		t.Errorf("drop counters: err %d len %d recycled %d", r.Stats.Drops[DropErrorBits].Load(), r.Stats.Drops[DropLength].Load(), r.Stats.Recycled.Load())
	}
	r.Close()
	if dma.Live() != 0 {
		t.Errorf("%d mappings leaked", dma.Live())
	}
}

func TestRefillSurvivesMapFailure(t *testing.T) {
	dma := fakedev.NewDMA()
	r, armed := newRx(t, dma, 8)
	// Hand up three buffers, then fail every map: the ring must keep what
	// it has, count the failures and fill up once maps work again.
	for range 3 {
		deliver(t, dma, armed[r.Clean()], pattern(600, 1))
		b, _, err := r.Receive(600)
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		r.Advance()
	}
	dma.FailAllMaps(true)
	if r.Refill(func(int, kernel.DMAAddr) {}) {
		t.Fatal("tail moved with every map failing")
	}
	if r.Stats.MapFailures.Load() != 1 || r.Armed() != 4 {
		t.Fatalf("map failures %d armed %d", r.Stats.MapFailures.Load(), r.Armed())
	}
	dma.FailAllMaps(false)
	dma.FailMaps(1)
	n := 0
	r.Refill(func(int, kernel.DMAAddr) { n++ })
	if n != 0 {
		t.Fatalf("refill went past a failed map: %d", n)
	}
	r.Refill(func(int, kernel.DMAAddr) { n++ })
	if n != 3 || r.Armed() != 7 {
		t.Fatalf("after recovery armed %d (+%d)", r.Armed(), n)
	}
	if r.Stats.MapFailures.Load() != 2 {
		t.Errorf("map failures %d, want 2", r.Stats.MapFailures.Load())
	}
	r.Close()
	if dma.Live() != 0 {
		t.Errorf("%d mappings leaked", dma.Live())
	}
}

func TestReceiveOnUnarmedSlot(t *testing.T) {
	dma := fakedev.NewDMA()
	r, err := NewRxRing(dma, 8, 16, bufSize)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Receive(64); err == nil {
		t.Fatal("receive from an unarmed slot succeeded")
	}
	r.Close()
}

func TestTxCommitReclaimAbort(t *testing.T) {
	dma := fakedev.NewDMA()
	tx, err := NewTxRing(dma, 8, 16, 256)
	if err != nil {
		t.Fatal(err)
	}
	done := map[int]bool{}
	// Packet 1: a bounce descriptor and a mapped payload.
	tx.Begin()
	a := tx.Claim()
	b := tx.Claim()
	if _, err := tx.Map(b, make([]byte, 1500)); err != nil {
		t.Fatal(err)
	}
	pkt := buffer.MakeWithData(pattern(1500, 9))
	tx.Commit(&pkt)
	if pkt.Size() != 0 {
		t.Error("commit left the caller owning the buffer")
	}
	// Packet 2 fails half way and is aborted.
	tx.Begin()
	c := tx.Claim()
	if _, err := tx.Map(c, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	dma.FailMaps(1)
	d := tx.Claim()
	if _, err := tx.Map(d, make([]byte, 100)); err == nil {
		t.Fatal("injected failure did not fail")
	}
	tx.Abort()
	if tx.Tail() != 2 || tx.InFlight() != 2 || dma.Live() != 1 {
		t.Fatalf("after abort: tail %d in flight %d live %d", tx.Tail(), tx.InFlight(), dma.Live())
	}
	// Nothing done yet: nothing reclaimed, even if a later slot says done.
	done[a] = true
	if n, _ := tx.Reclaim(func(i int) bool { return done[i] }); n != 0 {
		t.Fatalf("reclaimed %d before the packet's last descriptor was done", n)
	}
	done[b] = true
	if n, err := tx.Reclaim(func(i int) bool { return done[i] }); n != 2 || err != nil {
		t.Fatalf("reclaimed %d, %v", n, err)
	}
	if dma.Live() != 0 || tx.Free() != 7 {
		t.Errorf("live %d free %d", dma.Live(), tx.Free())
	}
	// Fill the ring: back-pressure at 7 descriptors.
	for i := range 8 {
		tx.Begin()
		if tx.Claim() < 0 {
			if i != 7 {
				t.Errorf("ring full after %d", i)
			}
			tx.Abort()
			break
		}
		tx.Commit(nil)
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
}
