package ring

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// txDesc is what the test encoder recorded for one descriptor.
type txDesc struct {
	addr        kernel.DMAAddr
	n           int
	first, last bool
}

// writeData runs Data for buf on ring t, recording each descriptor and the
// order they were written in.
func writeData(t *TxRing, buf *buffer.Buffer, s TxSplit) (map[int]txDesc, []int, error) {
	got := map[int]txDesc{}
	var order []int
	t.Begin()
	err := t.Data(buf, 0, s, func(desc []byte, addr kernel.DMAAddr, n int, first, last bool) {
		for i := 0; i < t.Descs.Len(); i++ {
			if &t.Descs.At(i)[0] == &desc[0] {
				got[i] = txDesc{addr, n, first, last}
				order = append(order, i)
			}
		}
	})
	return got, order, err
}

// views builds a buffer of one view per length, filled with a pattern.
// Each view shares its chunk with a clone kept until the test ends, so
// that Append does not merge it into the one before.
func views(t *testing.T, lens ...int) (*buffer.Buffer, []byte) {
	var b buffer.Buffer
	var all []byte
	for k, n := range lens {
		p := pattern(n, byte(k*31))
		all = append(all, p...)
		v := buffer.NewViewWithData(p)
		b.Append(v.Clone())
		t.Cleanup(v.Release)
	}
	if l := b.AsViewList(); len(lens) > 0 && len(l.Front().AsSlice()) != lens[0] {
		t.Fatalf("first view of %d bytes, want %d", len(l.Front().AsSlice()), lens[0])
	}
	return &b, all
}

// readBack is what the device would read from the descriptors, in order.
func readBack(t *testing.T, dma *fakedev.DMA, got map[int]txDesc, order []int) []byte {
	t.Helper()
	var out []byte
	for k, i := range order {
		d := got[i]
		if d.first != (k == 0) || d.last != (k == len(order)-1) {
			t.Errorf("descriptor %d of %d: first %v last %v", k, len(order), d.first, d.last)
		}
		b := make([]byte, d.n)
		if err := dma.DeviceRead(d.addr, b); err != nil {
			t.Fatalf("descriptor %d: %v", k, err)
		}
		out = append(out, b...)
	}
	return out
}

func newTx(t *testing.T, dma *fakedev.DMA, n int) *TxRing {
	t.Helper()
	r, err := NewTxRing(dma, n, 16, bufSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestTxDataCopies: data up to the copy limit is packed into bounce
// slots across its views, nothing mapped, and the device reads it whole.
func TestTxDataCopies(t *testing.T) {
	dma := fakedev.NewDMA()
	r := newTx(t, dma, 64)
	buf, want := views(t, 54, 1460, 3000, 7)
	got, order, err := writeData(r, buf, TxSplit{CopyMax: 1 << 16, MaxPerDesc: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	r.Commit(buf)
	if len(order) != 3 || got[order[0]].n != bufSize || got[order[2]].n != len(want)-2*bufSize {
		t.Errorf("descriptors %v: want two full slots and the rest", got)
	}
	if b := readBack(t, dma, got, order); !bytes.Equal(b, want) {
		t.Fatalf("device reads %d bytes, want the %d of the packet", len(b), len(want))
	}
	if r.Stats.Maps.Load() != 0 || r.Stats.Bounced.Load() != 1 || dma.Live() != 0 {
		t.Errorf("maps %d bounced %d live %d", r.Stats.Maps.Load(), r.Stats.Bounced.Load(), dma.Live())
	}
}

// TestTxDataMapsPerPage: data above the copy limit is mapped view by view,
// no descriptor crossing a device page or carrying more than MaxPerDesc.
func TestTxDataMapsPerPage(t *testing.T) {
	dma := fakedev.NewDMA()
	r := newTx(t, dma, 64)
	buf, want := views(t, 100, 9000, 5000)
	got, order, err := writeData(r, buf, TxSplit{CopyMax: 256, MaxPerDesc: 3000})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range order {
		d := got[i]
		if d.n > 3000 || int(d.addr%kernel.PageSize)+d.n > kernel.PageSize {
			t.Errorf("descriptor %d: %d bytes at %#x", i, d.n, uint64(d.addr))
		}
	}
	if b := readBack(t, dma, got, order); !bytes.Equal(b, want) {
		t.Fatalf("device reads %d bytes, want the %d of the packet", len(b), len(want))
	}
	if r.Stats.Maps.Load() != 3 || r.Mapped() != 3 || r.Stats.Bounced.Load() != 0 {
		t.Errorf("maps %d mapped %d bounced %d, want 3, 3, 0", r.Stats.Maps.Load(), r.Mapped(), r.Stats.Bounced.Load())
	}
	r.Commit(buf)
	if err := r.Drain(); err != nil || dma.Live() != 0 {
		t.Errorf("drain: %v, %d mappings left", err, dma.Live())
	}
}

// failLen is a DMA whose maps of n bytes fail.
type failLen struct {
	*fakedev.DMA
	n int
}

func (f failLen) Map(b []byte, dir kernel.Direction) (kernel.DMAAddr, error) {
	if len(b) == f.n {
		return 0, kernel.ErrNoIOVASpace
	}
	return f.DMA.Map(b, dir)
}

// TestTxDataMapFailureCopies: a view that cannot be mapped goes through
// bounce slots between mapped views, in order, byte for byte.
func TestTxDataMapFailureCopies(t *testing.T) {
	dma := fakedev.NewDMA()
	r, err := NewTxRing(failLen{dma, 5000}, 64, 16, bufSize)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf, want := views(t, 3000, 5000, 3000)
	got, order, err := writeData(r, buf, TxSplit{CopyMax: 256, MaxPerDesc: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	if b := readBack(t, dma, got, order); !bytes.Equal(b, want) {
		t.Fatalf("device reads %d bytes, want the %d of the packet", len(b), len(want))
	}
	if r.Stats.MapFailures.Load() != 1 || r.Stats.Maps.Load() != 2 || r.Stats.Bounced.Load() != 1 {
		t.Errorf("map failures %d maps %d bounced %d, want 1, 2, 1", r.Stats.MapFailures.Load(), r.Stats.Maps.Load(), r.Stats.Bounced.Load())
	}
	r.Commit(buf)
}

// TestTxDataFull: copied data that does not fit the free descriptors is
// refused before anything is copied, as back-pressure; data that could
// never fit the ring is an error.
func TestTxDataFull(t *testing.T) {
	dma := fakedev.NewDMA()
	r := newTx(t, dma, 8)
	s := TxSplit{CopyMax: 1 << 16, MaxPerDesc: 1 << 16}
	r.Begin()
	r.Claim()
	r.Commit(nil)
	big, _ := views(t, 7*bufSize)
	if _, _, err := writeData(r, big, s); !errors.Is(err, ErrTxFull) {
		t.Fatalf("%d bytes with 6 descriptors free: %v, want ErrTxFull", 7*bufSize, err)
	}
	r.Abort()
	huge, _ := views(t, 8*bufSize)
	if _, _, err := writeData(r, huge, s); err == nil || errors.Is(err, ErrTxFull) {
		t.Fatalf("%d bytes in an 8-descriptor ring: %v, want an error that is not back-pressure", 8*bufSize, err)
	}
	r.Abort()
	empty, _ := views(t)
	if _, _, err := writeData(r, empty, s); err == nil {
		t.Fatal("empty data accepted")
	}
	r.Abort()
	if r.InFlight() != 1 || r.Stats.Bounced.Load() != 0 {
		t.Errorf("in flight %d bounced %d after refusals", r.InFlight(), r.Stats.Bounced.Load())
	}
	big.Release()
	huge.Release()
}
