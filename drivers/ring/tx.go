package ring

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// TxStats counts what the TX path did. Safe to read while the ring runs.
type TxStats struct {
	Packets     atomic.Uint64 // packets queued to the device
	Bytes       atomic.Uint64
	Frames      atomic.Uint64 // frames the wire will carry (TSO counts its segments)
	TSO         atomic.Uint64 // packets segmented by the device
	SoftGSO     atomic.Uint64 // packets segmented in software
	Csum        atomic.Uint64 // packets with checksum offload
	Bounced     atomic.Uint64 // packets copied whole into bounce space
	Maps        atomic.Uint64
	Unmaps      atomic.Uint64
	MapFailures atomic.Uint64
	Full        atomic.Uint64 // Transmit calls that stopped on a full ring
	Doorbells   atomic.Uint64 // tail writes
	Reclaimed   atomic.Uint64 // descriptors freed
	Drops       atomic.Uint64 // packets refused as malformed
}

// Each calls fn for every counter in a stable order.
func (s *TxStats) Each(fn func(name string, v uint64)) {
	fn("tx_packets", s.Packets.Load())
	fn("tx_bytes", s.Bytes.Load())
	fn("tx_frames", s.Frames.Load())
	fn("tx_tso", s.TSO.Load())
	fn("tx_soft_gso", s.SoftGSO.Load())
	fn("tx_csum", s.Csum.Load())
	fn("tx_bounced", s.Bounced.Load())
	fn("tx_maps", s.Maps.Load())
	fn("tx_unmaps", s.Unmaps.Load())
	fn("tx_map_failures", s.MapFailures.Load())
	fn("tx_ring_full", s.Full.Load())
	fn("tx_doorbells", s.Doorbells.Load())
	fn("tx_reclaimed", s.Reclaimed.Load())
	fn("tx_drops", s.Drops.Load())
}

type txSlot struct {
	addr   kernel.DMAAddr // streaming mapping that starts at this descriptor
	maplen int
	mapped bool
	buf    buffer.Buffer // packet released when the device is done
	hasBuf bool
	eop    int  // on a packet's first descriptor: index of its last
	first  bool // this descriptor starts a packet
}

// TxRing is a transmit ring: descriptors, per-descriptor bounce space in
// coherent memory (for headers, small frames and software segments), and
// what each descriptor holds until the device reports it done. Descriptors
// [clean, next) are in flight.
type TxRing struct {
	Descs *Descs
	Stats TxStats

	dma       kernel.DMA
	slots     []txSlot
	bounce    kernel.Coherent
	bounceLen int
	next      int
	clean     int
	used      int
	mark      int // next at the start of the packet being built
	markUsed  int
}

// NewTxRing allocates n descriptors of descSize bytes with bounceLen bytes
// of bounce space per descriptor.
func NewTxRing(dma kernel.DMA, n, descSize, bounceLen int) (*TxRing, error) {
	d, err := NewDescs(dma, n, descSize)
	if err != nil {
		return nil, err
	}
	t := &TxRing{Descs: d, dma: dma, slots: make([]txSlot, n), bounceLen: bounceLen}
	if bounceLen > 0 {
		t.bounce, err = dma.AllocCoherent(n * bounceLen)
		if err != nil {
			d.Free()
			return nil, fmt.Errorf("ring: tx bounce space: %w", err)
		}
	}
	return t, nil
}

// Free is the number of descriptors a new packet may use. One slot stays
// empty so that a full ring is not mistaken for an empty one.
func (t *TxRing) Free() int { return len(t.slots) - 1 - t.used }

// InFlight is the number of descriptors the device owns.
func (t *TxRing) InFlight() int { return t.used }

// Tail is the value for the tail register.
func (t *TxRing) Tail() int { return t.next }

// BounceLen is the bounce space per descriptor.
func (t *TxRing) BounceLen() int { return t.bounceLen }

// Mapped counts live streaming mappings held by in-flight descriptors.
func (t *TxRing) Mapped() int {
	n := 0
	for i := range t.slots {
		if t.slots[i].mapped {
			n++
		}
	}
	return n
}

// Begin starts a packet: descriptors claimed until Commit or Abort belong
// to it.
func (t *TxRing) Begin() {
	t.mark, t.markUsed = t.next, t.used
}

// Claim takes the next descriptor for the packet being built and returns
// its index, or -1 when the ring is full.
func (t *TxRing) Claim() int {
	if t.Free() <= 0 {
		return -1
	}
	i := t.next
	t.slots[i] = txSlot{}
	t.next = t.Descs.Next(i)
	t.used++
	return i
}

// Bounce returns descriptor i's bounce space and its device address.
func (t *TxRing) Bounce(i int) ([]byte, kernel.DMAAddr) {
	off := i * t.bounceLen
	return t.bounce.Buf[off : off+t.bounceLen : off+t.bounceLen], t.bounce.Addr + kernel.DMAAddr(off)
}

// Map maps b for the device and records the mapping on descriptor i, to be
// undone when the packet completes.
func (t *TxRing) Map(i int, b []byte) (kernel.DMAAddr, error) {
	addr, err := t.dma.Map(b, kernel.ToDevice)
	if err != nil {
		t.Stats.MapFailures.Add(1)
		return 0, fmt.Errorf("ring: map tx buffer of %d bytes: %w", len(b), err)
	}
	t.Stats.Maps.Add(1)
	s := &t.slots[i]
	s.addr, s.maplen, s.mapped = addr, len(b), true
	return addr, nil
}

// Commit closes the packet begun last: buf (if not nil) is released once
// the device has finished with its last descriptor.
func (t *TxRing) Commit(buf *buffer.Buffer) {
	if t.next == t.mark && t.used == t.markUsed {
		if buf != nil {
			buf.Release()
		}
		return
	}
	first := t.mark
	last := (t.next - 1 + len(t.slots)) % len(t.slots)
	s := &t.slots[first]
	s.first, s.eop = true, last
	if buf != nil {
		l := &t.slots[last]
		l.buf, l.hasBuf = *buf, true
		*buf = buffer.Buffer{}
	}
}

// Abort undoes every descriptor claimed since Begin: their mappings are
// undone and the ring is as before. The device has not seen them.
func (t *TxRing) Abort() {
	for i := t.mark; t.used > t.markUsed; i = t.Descs.Next(i) {
		t.release(i)
		t.used--
	}
	t.next = t.mark
}

func (t *TxRing) release(i int) error {
	s := &t.slots[i]
	var err error
	if s.mapped {
		if err = t.dma.Unmap(s.addr, s.maplen, kernel.ToDevice); err == nil {
			t.Stats.Unmaps.Add(1)
		} else {
			err = fmt.Errorf("ring: unmap tx buffer at %#x: %w", uint64(s.addr), err)
		}
	}
	if s.hasBuf {
		s.buf.Release()
	}
	*s = txSlot{}
	return err
}

// Reclaim frees the descriptors of every completed packet, oldest first;
// done(i) reports whether the device has written back descriptor i. It
// returns the number of descriptors freed and any unmap failures.
func (t *TxRing) Reclaim(done func(i int) bool) (int, error) {
	freed := 0
	var errs []error
	for t.used > 0 {
		s := &t.slots[t.clean]
		if !s.first {
			// Not a packet start: only possible after a reset that lost
			// track; free it alone so the ring drains.
			errs = append(errs, fmt.Errorf("ring: tx descriptor %d in flight outside a packet", t.clean))
			t.release(t.clean)
			t.clean = t.Descs.Next(t.clean)
			t.used--
			freed++
			continue
		}
		eop := s.eop
		if !done(eop) {
			break
		}
		for {
			i := t.clean
			if err := t.release(i); err != nil {
				errs = append(errs, err)
			}
			t.clean = t.Descs.Next(i)
			t.used--
			freed++
			if i == eop {
				break
			}
		}
	}
	t.Stats.Reclaimed.Add(uint64(freed))
	return freed, errors.Join(errs...)
}

// Drain frees every descriptor whether or not the device finished: only
// after the device's transmitter is stopped.
func (t *TxRing) Drain() error {
	var errs []error
	for t.used > 0 {
		if err := t.release(t.clean); err != nil {
			errs = append(errs, err)
		}
		t.clean = t.Descs.Next(t.clean)
		t.used--
	}
	return errors.Join(errs...)
}

// Reset drains the ring and puts the cursors back to 0.
func (t *TxRing) Reset() error {
	err := t.Drain()
	t.next, t.clean, t.used = 0, 0, 0
	t.Descs.Clear()
	return err
}

// Close drains the ring and frees its memory.
func (t *TxRing) Close() error {
	errs := []error{t.Drain()}
	if t.bounce.Buf != nil {
		if err := t.dma.FreeCoherent(t.bounce); err != nil {
			errs = append(errs, fmt.Errorf("ring: free tx bounce space: %w", err))
		}
		t.bounce = kernel.Coherent{}
	}
	errs = append(errs, t.Descs.Free())
	return errors.Join(errs...)
}
