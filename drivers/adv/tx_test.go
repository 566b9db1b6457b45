package adv

import (
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedma"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"gvisor.dev/gvisor/pkg/buffer"
)

func newWriter(t *testing.T, n int, perPage bool) *Writer {
	t.Helper()
	tx, err := ring.NewTxRing(fakedma.New(), n, Size, 2048)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return &Writer{Ring: tx, CopyMax: 256, PerPage: perPage, MTU: func() int { return 9000 }, TSO: new(atomic.Bool)}
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

func TestDataDescriptorsPerPage(t *testing.T) {
	for _, c := range []struct {
		perPage bool
		want    []desc
	}{
		{false, []desc{{5000, true, true}}},
		{true, []desc{{4096, false, false}, {904, true, true}}},
	} {
		w := newWriter(t, 16, c.perPage)
		if taken, err := w.Batch([]*nic.TxPacket{frame(5000)}); taken != 1 || err != nil {
			t.Fatalf("perPage %v: Batch = %d, %v", c.perPage, taken, err)
		}
		got := written(w, 0, w.Ring.Tail())
		if len(got) != len(c.want) {
			t.Fatalf("perPage %v: descriptors %v, want %v", c.perPage, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("perPage %v: descriptor %d = %+v, want %+v", c.perPage, i, got[i], c.want[i])
			}
		}
	}
}

func TestShortFrameBounced(t *testing.T) {
	w := newWriter(t, 16, false)
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
	w := newWriter(t, 8, false) // seven usable slots
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
	w := newWriter(t, 16, false)
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
	w := newWriter(t, 16, false)
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
