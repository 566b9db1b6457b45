package nicmodel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// flatDMA is memory at device address 0 up, refusing what lies in deny.
type flatDMA struct {
	mem  []byte
	deny [2]uint64 // [from, to)
}

func (m *flatDMA) check(addr uint64, n int) error {
	if addr+uint64(n) > uint64(len(m.mem)) || addr < m.deny[1] && addr+uint64(n) > m.deny[0] {
		return fmt.Errorf("refused %#x+%d", addr, n)
	}
	return nil
}

func (m *flatDMA) Read(addr uint64, b []byte) error {
	if err := m.check(addr, len(b)); err != nil {
		return err
	}
	copy(b, m.mem[addr:])
	return nil
}

func (m *flatDMA) Write(addr uint64, b []byte) error {
	if err := m.check(addr, len(b)); err != nil {
		return err
	}
	copy(m.mem[addr:], b)
	return nil
}

// capture is a wire port that keeps what is sent.
type capture struct{ out [][]byte }

func (c *capture) Send(f []byte)          { c.out = append(c.out, bytes.Clone(f)) }
func (c *capture) Receive(func(f []byte)) {}

// A toy descriptor for the tests: bytes 0-7 the buffer address, 8-9 the
// length, byte 11 bit 0 EOP and bit 3 RS.
func putDesc(mem []byte, at uint64, addr uint64, n int, eop, rs bool) {
	d := mem[at : at+DescLen]
	clear(d)
	binary.LittleEndian.PutUint64(d, addr)
	binary.LittleEndian.PutUint16(d[8:], uint16(n))
	if eop {
		d[11] |= 1
	}
	if rs {
		d[11] |= 8
	}
}

func TestTxQueueRun(t *testing.T) {
	const base, bufs, ringLen = 0x1000, 0x4000, 64
	for _, headWB := range []uint64{0, 0x3000} {
		dma := &flatDMA{mem: make([]byte, 1<<16)}
		port := &capture{}
		frame := make([]byte, 100)
		for i := range frame {
			frame[i] = byte(i)
		}
		frame[0] = 0xff // broadcast
		copy(frame[1:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff})
		copy(dma.mem[bufs:], frame)
		// 40 one-buffer packets starting near the end of the ring, so
		// the batches are cut by the ring's end and by TxBatch; RS on
		// every fourth.
		head := uint32(50)
		for i := range uint32(40) {
			slot := (head + i) % ringLen
			putDesc(dma.mem, base+uint64(slot)*DescLen, bufs, len(frame), true, i%4 == 0)
		}
		tail := (head + 40) % ringLen
		var q TxQueue
		var batches []uint32
		load := func() (TxRing, TxLine, bool) {
			return TxRing{Base: base, Count: ringLen, Head: head, Tail: tail, HeadWB: headWB},
				TxLine{Port: port, Up: true, VET: 0x8100}, true
		}
		desc := func(d []byte) bool {
			addr := binary.LittleEndian.Uint64(d)
			if !q.Gather(dma, addr, int(binary.LittleEndian.Uint16(d[8:]))) {
				t.Errorf("a one-buffer packet did not begin at its descriptor")
			}
			if d[11]&1 != 0 {
				if p, ok := q.End(); ok {
					q.Send(p, false, 0)
				}
			}
			return d[11]&8 != 0
		}
		var frames uint64
		done := func(k uint32) {
			batches = append(batches, k)
			frames += q.Tally.Frames
			if q.Tally.Bcast != q.Tally.Frames || q.Tally.Bytes != q.Tally.Frames*uint64(len(frame)+FCSLen) {
				t.Errorf("tally %+v", q.Tally)
			}
			head = q.Ring.Next(k)
		}
		if err := q.Run(dma, new(sync.Mutex), 0, load, desc, done); err != nil {
			t.Fatal(err)
		}
		if want := []uint32{14, 26}; fmt.Sprint(batches) != fmt.Sprint(want) {
			t.Errorf("batches %v, want %v (to the ring's end, then up to the tail)", batches, want)
		}
		if len(port.out) != 40 || frames != 40 || !bytes.Equal(port.out[0], frame) {
			t.Fatalf("sent %d frames (tallied %d)", len(port.out), frames)
		}
		for i := range uint32(40) {
			slot := (50 + i) % ringLen
			dd := dma.mem[base+uint64(slot)*DescLen+12]&TxStaDD != 0
			if want := headWB == 0 && i%4 == 0; dd != want {
				t.Errorf("head write-back %#x: descriptor %d DD %v, want %v", headWB, slot, dd, want)
			}
		}
		if headWB != 0 {
			if got := binary.LittleEndian.Uint32(dma.mem[headWB:]); got != tail {
				t.Errorf("written-back head %d, want %d", got, tail)
			}
		}
	}
}

// With a limit Run stops after that many descriptors, even inside a
// packet, and the next Run goes on gathering it; buffers are read when
// their descriptor is processed, not before.
func TestTxQueueRunLimit(t *testing.T) {
	const base, bufs, ringLen = 0x1000, 0x4000, 16
	dma := &flatDMA{mem: make([]byte, 1<<16)}
	port := &capture{}
	// Three packets of two 40-byte buffers each.
	for i := range uint64(6) {
		putDesc(dma.mem, base+i*DescLen, bufs+i*0x100, 40, i%2 == 1, i%2 == 1)
	}
	var q TxQueue
	head, tail := uint32(0), uint32(6)
	load := func() (TxRing, TxLine, bool) {
		return TxRing{Base: base, Count: ringLen, Head: head, Tail: tail}, TxLine{Port: port, Up: true}, true
	}
	desc := func(d []byte) bool {
		q.Gather(dma, binary.LittleEndian.Uint64(d), int(binary.LittleEndian.Uint16(d[8:])))
		if d[11]&1 != 0 {
			if p, ok := q.End(); ok {
				q.Send(p, false, 0)
			}
		}
		return d[11]&8 != 0
	}
	done := func(k uint32) { head = q.Ring.Next(k) }
	fill := func(i uint64, b byte) { clear(dma.mem[bufs+i*0x100 : bufs+i*0x100+40]); dma.mem[bufs+i*0x100] = b }
	for i := range uint64(6) {
		fill(i, byte(i))
	}
	if err := q.Run(dma, new(sync.Mutex), 3, load, desc, done); err != nil {
		t.Fatal(err)
	}
	if head != 3 || len(port.out) != 1 {
		t.Fatalf("after a run of 3: head %d, %d frames sent, want 3 and 1", head, len(port.out))
	}
	// Software rewrites a buffer the device has not read yet: the
	// device sends the new bytes.
	fill(5, 0x55)
	if err := q.Run(dma, new(sync.Mutex), 3, load, desc, done); err != nil {
		t.Fatal(err)
	}
	if head != 6 || len(port.out) != 3 {
		t.Fatalf("after a second run of 3: head %d, %d frames sent, want 6 and 3", head, len(port.out))
	}
	for i, f := range port.out {
		want := [2]byte{byte(2 * i), byte(2*i + 1)}
		if i == 2 {
			want[1] = 0x55 // rewritten before the device read it
		}
		if len(f) != 80 || f[0] != want[0] || f[40] != want[1] {
			t.Errorf("frame %d: %d bytes, buffers begin %#x %#x, want %#x %#x", i, len(f), f[0], f[40], want[0], want[1])
		}
	}
}

func TestTxQueueFaults(t *testing.T) {
	dma := &flatDMA{mem: make([]byte, 1<<16), deny: [2]uint64{0x8000, 0x9000}}
	port := &capture{}
	var q TxQueue
	q.Line = TxLine{Port: port, Up: true}

	// A refused descriptor fetch stops Run with an error and runs nothing.
	ran := false
	err := q.Run(dma, new(sync.Mutex), 0, func() (TxRing, TxLine, bool) {
		return TxRing{Base: 0x8000, Count: 8, Head: 0, Tail: 3}, q.Line, true
	}, func([]byte) bool { ran = true; return false }, func(uint32) {})
	if err == nil || ran {
		t.Fatalf("refused fetch: err %v, processed %v", err, ran)
	}

	// A refused buffer spoils the packet: later buffers are skipped and
	// End drops it, counting the packet and the fault.
	q.Tally = TxTally{}
	q.Gather(dma, 0x100, 20)
	q.Gather(dma, 0x8800, 20)
	if first := q.Gather(dma, 0x200, 20); first {
		t.Error("the third buffer began a packet")
	}
	if _, ok := q.End(); ok {
		t.Error("a packet with a refused buffer was sent")
	}
	if q.Tally.DMAFaults != 1 || q.Tally.Packets != 1 {
		t.Errorf("tally %+v", q.Tally)
	}

	// Past MaxTxPacket the packet is a bad descriptor.
	q.Tally = TxTally{}
	for range MaxTxPacket/0x4000 + 1 {
		q.Gather(dma, 0, 0x4000)
	}
	if _, ok := q.End(); ok || q.Tally.BadDesc != 1 || q.Tally.DMAFaults != 0 {
		t.Errorf("oversized packet: ok %v, tally %+v", ok, q.Tally)
	}
	// The next packet starts clean.
	if !q.Gather(dma, 0, 64) {
		t.Error("no packet began after the spoilt one")
	}
	if p, ok := q.End(); !ok || len(p) != 64 {
		t.Errorf("clean packet: %d bytes, ok %v", len(p), ok)
	}
}

func TestTxQueueSend(t *testing.T) {
	port := &capture{}
	q := TxQueue{Line: TxLine{Port: port, Up: true, PSP: true, VET: 0x88a8}}
	f := []byte{1, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00, 0x45}

	q.Send(f, true, 0x0123)
	q.Send(f, false, 0)
	q.Send(f[:10], false, 0) // shorter than the Ethernet header
	q.Line.Up = false
	q.Send(f, false, 0)
	if len(port.out) != 2 {
		t.Fatalf("sent %d frames, want 2", len(port.out))
	}
	tagged := port.out[0]
	want := append(append(append([]byte{}, f[:12]...), 0x88, 0xa8, 0x01, 0x23), f[12:]...)
	if len(tagged) != MinFrame || !bytes.Equal(tagged[:len(want)], want) || tagged[MinFrame-1] != 0 {
		t.Errorf("tagged frame % x", tagged)
	}
	if len(port.out[1]) != MinFrame || !bytes.Equal(port.out[1][:len(f)], f) {
		t.Errorf("padded frame % x", port.out[1])
	}
	if tl := q.Tally; tl.Frames != 2 || tl.Mcast != 2 || tl.BadDesc != 1 || tl.NoLink != 1 || tl.Sizes[0] != 2 || tl.Bytes != 2*64 {
		t.Errorf("tally %+v", tl)
	}

	r := make([]uint32, 0x4200/4)
	q.Tally.TSOFail = 3
	q.Tally.AddStats(r)
	for _, c := range []struct {
		off  uint32
		want uint32
	}{{GPTC, 2}, {TPT, 2}, {GOTCL, 128}, {TOTL, 128}, {MPTC, 2}, {BPTC, 0}, {PTC64, 2}, {TSCTFC, 3}} {
		if got := ReadStat(r, c.off); got != c.want {
			t.Errorf("statistic %#x = %d, want %d", c.off, got, c.want)
		}
	}
	var c TxCounters
	c.Add(&q.Tally)
	if c.TxFrames != 2 || c.TxNoLink != 1 || c.TxBadDesc != 1 {
		t.Errorf("counters %+v", c)
	}
}

func TestTxQueueSegment(t *testing.T) {
	port := &capture{}
	q := TxQueue{Line: TxLine{Port: port, Up: true}}
	err := q.Segment(&TSO{MSS: 0, HdrLen: 54}, make([]byte, 100), false, 0)
	if !errors.Is(err, ErrBadTSO) || len(port.out) != 0 {
		t.Fatalf("bad set-up: %v, %d frames", err, len(port.out))
	}
}
