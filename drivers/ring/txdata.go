package ring

import (
	"errors"
	"fmt"

	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// TxEncoder writes one data descriptor in a driver's format: n bytes at
// addr. first marks the first descriptor of the call (the one that
// carries per-packet options), last the packet's last, which gets EOP
// and asks for a status write-back, since the ring reclaims a packet by
// its last descriptor.
type TxEncoder func(desc []byte, addr kernel.DMAAddr, n int, first, last bool)

// TxSplit says how a driver's data is cut into descriptors.
type TxSplit struct {
	// CopyMax is the most data copied into bounce slots rather than
	// mapped. Behind an IOMMU a map is page-table writes and its unmap
	// an IOTLB invalidation, which costs more than copying a frame.
	CopyMax int
	// MaxPerDesc is the most bytes one data descriptor may carry.
	MaxPerDesc int
}

// Data writes the data descriptors for buf from offset off to its end.
// Data up to s.CopyMax is copied into the bounce slots of as many
// descriptors as it needs; longer data is mapped view by view, a view
// the platform cannot map copied instead, never dropped. Mapped data gets
// a descriptor per device page: behind an IOMMU the pages of a mapping
// are scattered in memory, and a device (QEMU's models among them) may
// fetch one descriptor's buffer as one contiguous piece. On error the
// caller aborts the packet.
func (t *TxRing) Data(buf *buffer.Buffer, off int, s TxSplit, enc TxEncoder) error {
	n := int(buf.Size()) - off
	if n <= 0 {
		return errors.New("ring: empty frame")
	}
	w := txData{t: t, enc: enc, max: s.MaxPerDesc, per: min(t.bounceLen, s.MaxPerDesc), left: n, first: true}
	if w.per <= 0 {
		return fmt.Errorf("ring: no bounce space for tx data (slots of %d bytes, descriptors of %d)", t.bounceLen, s.MaxPerDesc)
	}
	if n <= s.CopyMax {
		need := (n + w.per - 1) / w.per
		if need > t.Descs.Len()-1 {
			// Never fits however much is reclaimed: an error, not
			// back-pressure that would stall the queue.
			return fmt.Errorf("ring: %d bytes need %d bounce slots, more than the %d-descriptor ring holds", n, need, t.Descs.Len())
		}
		if need > t.Free() {
			return ErrTxFull
		}
		t.Stats.Bounced.Add(1)
		return eachView(buf, off, func(b []byte) error { return w.copy(b, -1) })
	}
	err := eachView(buf, off, w.mapped)
	if w.bounced {
		t.Stats.Bounced.Add(1)
	}
	return err
}

// eachView calls fn with the bytes of each of buf's views from offset
// off on, in order, stopping at its first error.
func eachView(buf *buffer.Buffer, off int, fn func([]byte) error) error {
	l := buf.AsViewList()
	for v := l.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if off >= len(b) {
			off -= len(b)
			continue
		}
		b, off = b[off:], 0
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// txData is one call of Data: what is left to describe and the bounce
// slot being filled.
type txData struct {
	t       *TxRing
	enc     TxEncoder
	max     int  // bytes per descriptor
	per     int  // bytes per bounce slot
	left    int  // bytes not yet in a written descriptor
	first   bool // no descriptor written yet
	bounced bool // a view was copied because it could not be mapped

	slot []byte // the bounce slot being filled, nil when none
	addr kernel.DMAAddr
	desc int // the slot's descriptor
	fill int // bytes in the slot
}

// emit writes descriptor i for n bytes at addr.
func (w *txData) emit(i int, addr kernel.DMAAddr, n int) {
	w.left -= n
	w.enc(w.t.Descs.At(i), addr, n, w.first, w.left == 0)
	w.first = false
}

// flush writes the descriptor of the slot being filled.
func (w *txData) flush() {
	if w.slot != nil {
		w.emit(w.desc, w.addr, w.fill)
		w.slot = nil
	}
}

// copy appends b to bounce slots, claiming a descriptor for each new
// slot; i, when not negative, is a descriptor already claimed, which
// takes the first slot.
func (w *txData) copy(b []byte, i int) error {
	for len(b) > 0 {
		if w.slot == nil {
			if i < 0 {
				var err error
				if i, err = w.t.ClaimDesc(); err != nil {
					return err
				}
			}
			slot, addr := w.t.Bounce(i)
			w.slot, w.addr, w.desc, w.fill, i = slot[:w.per], addr, i, 0, -1
		}
		k := copy(w.slot[w.fill:], b)
		w.fill += k
		b = b[k:]
		if w.fill == len(w.slot) || w.fill == w.left {
			w.flush()
		}
	}
	return nil
}

// mapped maps b and describes it a device page at a time; when the
// platform cannot map it (no IOVA space left, physically scattered pages
// with translation off) it is copied into bounce slots instead.
func (w *txData) mapped(b []byte) error {
	w.flush()
	i, err := w.t.ClaimDesc()
	if err != nil {
		return err
	}
	addr, err := w.t.Map(i, b)
	if err != nil {
		w.bounced = true
		return w.copy(b, i)
	}
	for {
		k := min(len(b), w.perDesc(addr))
		w.emit(i, addr, k)
		b, addr = b[k:], addr+kernel.DMAAddr(k)
		if len(b) == 0 {
			return nil
		}
		if i, err = w.t.ClaimDesc(); err != nil {
			return err
		}
	}
}

// perDesc is the most one descriptor takes of mapped data at addr: up to
// the end of its device page.
func (w *txData) perDesc(addr kernel.DMAAddr) int {
	return min(w.max, kernel.PageSize-int(uint64(addr)%kernel.PageSize))
}
