package advplay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ether9/ether9/drivers/adv"
	"github.com/ether9/ether9/drivers/internal/failtest"
	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
)

// bench is one queue pair of 8 descriptors over fakedev DMA, the test
// being the driver that arms and posts them.
type bench struct {
	dma    *fakedev.DMA
	regs   *fakedev.File
	rx, tx *ring.Descs
	dev    *Device
}

func newBench(t *testing.T) *bench {
	t.Helper()
	b := &bench{dma: fakedev.NewDMA(), regs: fakedev.NewFile(nil, fakedev.Effects{})}
	var err error
	if b.rx, err = ring.NewDescs(b.dma, 8, 16); err != nil {
		t.Fatal(err)
	}
	if b.tx, err = ring.NewDescs(b.dma, 8, 16); err != nil {
		t.Fatal(err)
	}
	b.dev = New(b.regs, b.dma, 1, func(int) (rx, tx *ring.Descs) { return b.rx, b.tx })
	return b
}

func (b *bench) mapBuf(t *testing.T, buf []byte, dir kernel.Direction) uint64 {
	t.Helper()
	a, err := b.dma.Map(buf, dir)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(a)
}

func TestDeliverFillsArmedDescriptors(t *testing.T) {
	b := newBench(t)
	bufs := [][]byte{make([]byte, 2048), make([]byte, 2048)}
	for i, buf := range bufs {
		adv.EncodeRxRead(b.rx.At(i), b.mapBuf(t, buf, kernel.FromDevice))
	}
	b.regs.Write32(adv.QueueReg(adv.RDT, 0), 2)
	frames := [][]byte{bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 1514)}
	for i, f := range frames {
		if !b.dev.Deliver(t, 0, f, adv.RXD_STAT_EOP, 0xabcd) {
			t.Fatalf("frame %d found no armed descriptor", i)
		}
	}
	if b.dev.Deliver(t, 0, frames[0], adv.RXD_STAT_EOP, 0) {
		t.Fatal("a frame landed past the tail")
	}
	for i, f := range frames {
		w := adv.DecodeRx(b.rx.At(i))
		if !w.Done() || !w.EOP() || w.Length != len(f) || w.Hash != 0xabcd || w.RSSType != 1 || !bytes.Equal(bufs[i][:len(f)], f) {
			t.Errorf("descriptor %d: write-back %+v, buffer matches %v", i, w, bytes.Equal(bufs[i][:len(f)], f))
		}
	}
	if b.dev.RxHead[0] != 2 {
		t.Errorf("head %d after two frames", b.dev.RxHead[0])
	}
}

func TestTransmitGathersFrames(t *testing.T) {
	b := newBench(t)
	head, body := []byte("0123456789abcd"), bytes.Repeat([]byte{7}, 100)
	adv.Context{MACLen: 14, IPLen: 20}.Encode(b.tx.At(0))
	adv.EncodeData(b.tx.At(1), b.mapBuf(t, head, kernel.ToDevice), len(head), 0, 0, len(head)+len(body))
	adv.EncodeData(b.tx.At(2), b.mapBuf(t, body, kernel.ToDevice), len(body), 0, 0, 0)
	adv.SetEOP(b.tx.At(2))
	b.regs.Write32(adv.QueueReg(adv.TDT, 0), 3)
	ctxs := b.dev.Transmit(t, 0)
	if len(ctxs) != 1 || len(b.dev.Wire) != 1 || !bytes.Equal(b.dev.Wire[0], append(head, body...)) {
		t.Fatalf("%d contexts, wire %q", len(ctxs), b.dev.Wire)
	}
	if !adv.TxDone(b.tx.At(2)) || adv.TxDone(b.tx.At(1)) {
		t.Error("DD must be written where RS asked, and only there")
	}
	if b.dev.TxHead[0] != 3 {
		t.Errorf("head %d, want the tail", b.dev.TxHead[0])
	}
}

func TestTransmitRefusesBadDescriptors(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		post       func(t *testing.T, b *bench, d []byte)
	}{
		{"legacy", "not extended", func(t *testing.T, b *bench, d []byte) { clear(d[8:12]) }},
		{"no EOP", "without EOP", func(t *testing.T, b *bench, d []byte) {
			adv.EncodeData(d, b.mapBuf(t, make([]byte, 64), kernel.ToDevice), 64, 0, 0, 64)
		}},
		{"page crossed", "cross a page", func(t *testing.T, b *bench, d []byte) {
			adv.EncodeData(d, kernel.PageSize-32, 64, 0, 0, 64)
			adv.SetEOP(d)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t)
			tc.post(t, b, b.tx.At(0))
			b.regs.Write32(adv.QueueReg(adv.TDT, 0), 1)
			if msg := failtest.First(func(tb testing.TB) { b.dev.Transmit(tb, 0) }); !strings.Contains(msg, tc.want) {
				t.Errorf("failure %q, want it to say %q", msg, tc.want)
			}
		})
	}
}
