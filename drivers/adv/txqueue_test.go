package adv

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/drivers/nic"
)

const tdt = 0xe018

func newQueue(t *testing.T) (*Queue, *fakedev.File, *[]int) {
	t.Helper()
	f := fakedev.NewFile(nil, fakedev.Effects{})
	var done []int
	q := &Queue{Writer: *newWriter(t, 16, 256), Regs: f, TDT: tdt, Name: "igx eth9: queue 0", Complete: func(i int) { done = append(done, i) }}
	return q, f, &done
}

// The device completing descriptor i: its DD bit.
func complete(q *Queue, i int) {
	d := q.Ring.Descs.At(i)
	binary.LittleEndian.PutUint32(d[12:], binary.LittleEndian.Uint32(d[12:])|TXD_STAT_DD)
}

func TestQueueDoorbells(t *testing.T) {
	q, f, done := newQueue(t)
	if n, err := q.Transmit([]*nic.TxPacket{frame(60), frame(1500)}); n != 2 || err != nil {
		t.Fatalf("transmit: %d, %v", n, err)
	}
	if f.Writes(tdt) != 1 || int(f.Get(tdt)) != q.Ring.Tail() || q.Dirty {
		t.Fatalf("one batch: TDT written %d times, %d, tail %d, dirty %v", f.Writes(tdt), f.Get(tdt), q.Ring.Tail(), q.Dirty)
	}
	q.Flush()
	if f.Writes(tdt) != 1 {
		t.Error("flush with nothing queued rang the doorbell")
	}
	if !q.SendCopy(make([]byte, 60)) || !q.Dirty || f.Writes(tdt) != 1 {
		t.Fatalf("copied frame: dirty %v, TDT written %d times", q.Dirty, f.Writes(tdt))
	}
	i, ok := q.SendFrame(0x10000, 128)
	if !ok {
		t.Fatal("socket frame refused")
	}
	q.Flush()
	if f.Writes(tdt) != 2 || int(f.Get(tdt)) != q.Ring.Tail() {
		t.Fatalf("flush: TDT written %d times, %d, tail %d", f.Writes(tdt), f.Get(tdt), q.Ring.Tail())
	}
	for j := 0; j <= i; j++ {
		complete(q, j)
	}
	if n := q.Reclaim(); n != i+1 || len(*done) != i+1 || (*done)[i] != i {
		t.Fatalf("reclaimed %d, completed %v; want %d through %d", n, *done, i+1, i)
	}
}

func TestQueueClosed(t *testing.T) {
	q, f, _ := newQueue(t)
	q.Closed = true
	if n, err := q.Transmit([]*nic.TxPacket{frame(60)}); n != 0 || err == nil {
		t.Errorf("transmit on a closed queue: %d, %v", n, err)
	}
	if q.SendCopy(make([]byte, 60)) || q.Ring.Stats.Drops.Load() != 1 {
		t.Errorf("closed queue took a copied frame (drops %d)", q.Ring.Stats.Drops.Load())
	}
	if _, ok := q.SendFrame(0x10000, 60); ok {
		t.Error("closed queue took a socket frame")
	}
	if q.Reclaim() != 0 || f.Writes(tdt) != 0 {
		t.Errorf("closed queue reclaimed or rang: TDT written %d times", f.Writes(tdt))
	}
}

func TestFeatures(t *testing.T) {
	if f := Features(true); !f.TSOv4 || !f.TSOv6 || f.MaxGSO != MaxTSO || !f.RxChecksum || !f.TxChecksum {
		t.Errorf("tso on: %+v", f)
	}
	if f := Features(false); f.TSOv4 || f.TSOv6 || f.MaxGSO != 0 || !f.TxChecksum {
		t.Errorf("tso off: %+v", f)
	}
}
