package adv

import (
	"bytes"
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// newWriter is a writer over an n-descriptor ring that copies up to
// copyMax bytes.
func newWriter(t *testing.T, n, copyMax int) *Writer {
	t.Helper()
	tx, err := ring.NewTxRing(fakedev.NewDMA(), n, Size, 2048)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return &Writer{Ring: tx, CopyMax: copyMax, MTU: func() int { return 9000 }, TSO: new(atomic.Bool)}
}

// desc is a written data descriptor: length and the EOP and RS bits.
type desc struct {
	n       int
	eop, rs bool
}

func written(w *Writer, from, to int) []desc {
	var out []desc
	for i := from; i < to; i++ {
		ctl := binary.LittleEndian.Uint32(w.Ring.Descs.At(i)[8:])
		out = append(out, desc{int(ctl & TXD_LEN_MASK), ctl&TXD_DCMD_EOP != 0, ctl&TXD_DCMD_RS != 0})
	}
	return out
}

func frame(n int) *nic.TxPacket {
	b := make([]byte, n)
	b[12], b[13] = 0x08, 0x00
	return &nic.TxPacket{Data: buffer.MakeWithData(b)}
}

// TestDataDescriptors: a frame above the copy limit is mapped, a
// descriptor per device page; at or below it, it is copied into bounce
// slots, a descriptor per slot. The last alone has EOP and RS.
func TestDataDescriptors(t *testing.T) {
	for _, c := range []struct {
		copyMax int
		want    []desc
		maps    uint64
	}{
		{256, []desc{{4096, false, false}, {904, true, true}}, 1},
		{MaxTSO, []desc{{2048, false, false}, {2048, false, false}, {904, true, true}}, 0},
	} {
		w := newWriter(t, 16, c.copyMax)
		if taken, err := w.Batch([]*nic.TxPacket{frame(5000)}); taken != 1 || err != nil {
			t.Fatalf("copy max %d: Batch = %d, %v", c.copyMax, taken, err)
		}
		got := written(w, 0, w.Ring.Tail())
		if len(got) != len(c.want) {
			t.Fatalf("copy max %d: descriptors %v, want %v", c.copyMax, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("copy max %d: descriptor %d = %+v, want %+v", c.copyMax, i, got[i], c.want[i])
			}
		}
		if m := w.Ring.Stats.Maps.Load(); m != c.maps {
			t.Errorf("copy max %d: %d maps, want %d", c.copyMax, m, c.maps)
		}
	}
}

func TestShortFrameBounced(t *testing.T) {
	w := newWriter(t, 16, 256)
	if taken, err := w.Batch([]*nic.TxPacket{frame(100)}); taken != 1 || err != nil {
		t.Fatalf("Batch = %d, %v", taken, err)
	}
	if got := written(w, 0, w.Ring.Tail()); len(got) != 1 || got[0] != (desc{100, true, true}) {
		t.Fatalf("descriptors %v, want one of 100 bytes with EOP and RS", got)
	}
	if w.Ring.Stats.Bounced.Load() != 1 || w.Ring.Mapped() != 0 {
		t.Errorf("bounced %d mapped %d, want 1 and 0", w.Ring.Stats.Bounced.Load(), w.Ring.Mapped())
	}
}

func TestBatchStopsWhenFull(t *testing.T) {
	w := newWriter(t, 8, 256) // seven usable slots
	var pkts []*nic.TxPacket
	for range 9 {
		pkts = append(pkts, frame(60))
	}
	taken, err := w.Batch(pkts)
	if taken != 7 || err != nil {
		t.Fatalf("Batch = %d, %v; want 7 taken, no error", taken, err)
	}
	if w.Ring.Stats.Full.Load() != 1 || w.Ring.Stats.Drops.Load() != 0 {
		t.Errorf("full %d drops %d, want 1 and 0", w.Ring.Stats.Full.Load(), w.Ring.Stats.Drops.Load())
	}
}

func TestBatchRefusesMalformed(t *testing.T) {
	w := newWriter(t, 16, 256)
	bad := frame(200)
	bad.NeedsCsum, bad.CsumStart, bad.CsumOffset = true, 34, 9
	taken, err := w.Batch([]*nic.TxPacket{frame(60), bad, frame(60)})
	if taken != 1 || err == nil || !strings.Contains(err.Error(), "packet 1") {
		t.Fatalf("Batch = %d, %v; want 1 taken and an error naming packet 1", taken, err)
	}
	if w.Ring.Tail() != 1 || w.Ring.Stats.Drops.Load() != 1 {
		t.Errorf("tail %d drops %d: the bad packet left descriptors or went uncounted", w.Ring.Tail(), w.Ring.Stats.Drops.Load())
	}
	if _, err := w.Batch([]*nic.TxPacket{frame(9100)}); err == nil || !strings.Contains(err.Error(), "above mtu") {
		t.Errorf("oversized frame: %v, want an mtu error", err)
	}
}

func TestCopy(t *testing.T) {
	w := newWriter(t, 16, 256)
	if w.Copy(make([]byte, 10)) || w.Copy(make([]byte, 3000)) {
		t.Fatal("Copy took a runt or a frame beyond bounce space")
	}
	if !w.Copy(make([]byte, 1514)) {
		t.Fatal("Copy refused a full-size frame")
	}
	if got := written(w, 0, w.Ring.Tail()); len(got) != 1 || got[0] != (desc{1514, true, true}) {
		t.Fatalf("descriptors %v", got)
	}
	if w.Ring.Stats.Drops.Load() != 2 || w.Ring.Stats.Packets.Load() != 1 {
		t.Errorf("drops %d packets %d, want 2 and 1", w.Ring.Stats.Drops.Load(), w.Ring.Stats.Packets.Load())
	}
}

// TestMapFailureCopies: a frame above the copy limit whose map fails goes
// out through bounce slots, byte for byte, with EOP and RS on the last
// descriptor alone: never dropped.
func TestMapFailureCopies(t *testing.T) {
	dma := fakedev.NewDMA()
	tx, err := ring.NewTxRing(dma, 16, Size, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	w := &Writer{Ring: tx, CopyMax: 256, MTU: func() int { return 9000 }, TSO: new(atomic.Bool)}
	want := make([]byte, 5000)
	for i := range want {
		want[i] = byte(i * 7)
	}
	want[12], want[13] = 0x08, 0x00
	p := &nic.TxPacket{Data: buffer.MakeWithData(want)}
	dma.FailAllMaps(true)
	if taken, err := w.Batch([]*nic.TxPacket{p}); taken != 1 || err != nil {
		t.Fatalf("Batch with maps failing = %d, %v", taken, err)
	}
	descs := written(w, 0, w.Ring.Tail())
	var got []byte
	for i, d := range descs {
		if d.eop != (i == len(descs)-1) || d.rs != d.eop {
			t.Errorf("descriptor %d of %d: %+v", i, len(descs), d)
		}
		b := make([]byte, d.n)
		if err := dma.DeviceRead(kernel.DMAAddr(binary.LittleEndian.Uint64(w.Ring.Descs.At(i))), b); err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("device reads %d bytes, want the frame's %d", len(got), len(want))
	}
	if tx.Stats.MapFailures.Load() != 1 || tx.Stats.Bounced.Load() != 1 || tx.Mapped() != 0 {
		t.Errorf("map failures %d bounced %d mapped %d, want 1, 1, 0", tx.Stats.MapFailures.Load(), tx.Stats.Bounced.Load(), tx.Mapped())
	}
}
