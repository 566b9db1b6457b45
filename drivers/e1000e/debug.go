package e1000e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
	"github.com/ether9/ether9/kernel"
)

// debugCtl runs a debug command:
//
//	inject-unmapped-rx   arm the next free RX descriptor with an IOVA the
//	                     domain does not map: the device's write of the
//	                     next frame there faults, and the driver must
//	                     notice, drop the frame and carry on
//	inject-unmapped-tx   point the first data descriptor of the next
//	                     packet sent at an unmapped IOVA: the device's
//	                     read faults, and the driver must notice, count
//	                     it and send the packet again (see settleTx)
func (d *Device) debugCtl(arg string) error {
	switch arg {
	case "inject-unmapped-rx":
		return d.injectUnmappedRx()
	case "inject-unmapped-tx":
		return d.injectUnmappedTx()
	}
	return fmt.Errorf("e1000e %s: debug %q: want inject-unmapped-rx or inject-unmapped-tx", d.name, arg)
}

func (d *Device) injectUnmappedRx() error {
	d.q.rxMu.Lock()
	defer d.q.rxMu.Unlock()
	err := errors.New("device closed")
	if !d.closed.Load() {
		err = d.q.inject.Start(d.dma, rxBufSize, d.name, d.logf)
	}
	if err != nil {
		return fmt.Errorf("e1000e %s: debug inject-unmapped-rx: %w", d.name, err)
	}
	return nil
}

// armRx is writeRx for a refill while an injection waits for its
// descriptor. rxMu is held.
func (q *queue) armRx(i int, addr kernel.DMAAddr) { q.writeRx(i, q.inject.Arm(i, addr)) }

// txInject is the state of one debug inject-unmapped-tx. Guarded by txMu,
// but for the atomics, which the receive path and Stats read.
type txInject struct {
	hole    kernel.DMAAddr // 0: none reserved
	pending bool           // the next packet that can carry it gets the hole
	armed   bool           // a packet in the ring points into the hole
	desc    int            // its data descriptor aimed at the hole
	eop     int            // its last descriptor, whose write-back ends it
	faults  uint64         // the domain's fault count when it was armed
	pkt     *nic.TxPacket  // the driver's own copy of that packet
	resend  *nic.TxPacket  // the copy, waiting for room in the ring

	inFlight atomic.Bool   // the device may read the hole: see rxFaultCount
	owned    atomic.Uint64 // DMA faults the transmit path took as its own
	faulted  atomic.Uint64 // tx_dma_faults
	resent   atomic.Uint64 // tx_dma_resent
}

func (d *Device) injectUnmappedTx() error {
	h, ok := d.dma.(ring.Holer)
	_, counts := d.dma.(ring.FaultCounter)
	if !ok || !counts {
		return fmt.Errorf("e1000e %s: debug inject-unmapped-tx: the DMA view has no IOMMU holes or fault count (translation off?)", d.name)
	}
	d.q.txMu.Lock()
	defer d.q.txMu.Unlock()
	if d.closed.Load() {
		return fmt.Errorf("e1000e %s: debug inject-unmapped-tx: device closed", d.name)
	}
	inj := &d.q.txInj
	if inj.hole != 0 || inj.resend != nil {
		return fmt.Errorf("e1000e %s: debug inject-unmapped-tx: one is already in flight", d.name)
	}
	// One page: a data descriptor never crosses a page of its buffer, so
	// whatever the device fetches for it lies inside the hole.
	hole, err := h.ReserveHole(kernel.PageSize)
	if err != nil {
		return fmt.Errorf("e1000e %s: debug inject-unmapped-tx: %w", d.name, err)
	}
	inj.hole, inj.pending = hole, true
	return nil
}

// txInjectCopy returns the driver's own copy of p when p is to carry a
// pending injection, nil otherwise. A packet segmented in software is
// passed over: it is several frames, and sending it again would repeat
// the ones that went out. txMu is held.
func (q *queue) txInjectCopy(p *nic.TxPacket) *nic.TxPacket {
	if !q.txInj.pending || p.GSO != nic.GSONone && !q.d.tso.Load() {
		return nil
	}
	c := *p
	c.Data = p.Data.Clone()
	return &c
}

// armTx aims the first data descriptor of the packet just queued at
// descriptors [start, Tail) at the hole and keeps the driver's copy of the
// packet. The descriptor's own buffer stays with its slot and is released
// with it. txMu is held.
func (q *queue) armTx(start int, keep *nic.TxPacket) {
	d, tx, inj := q.d, q.tx, &q.txInj
	end := tx.Tail()
	for i := start; i != end; i = tx.Descs.Next(i) {
		desc := tx.Descs.At(i)
		if !isTxData(desc) {
			continue
		}
		binary.LittleEndian.PutUint64(desc, uint64(inj.hole))
		inj.pending, inj.armed, inj.pkt = false, true, keep
		inj.desc, inj.eop = i, (end-1+tx.Descs.Len())%tx.Descs.Len()
		inj.faults = d.dma.(ring.FaultCounter).DMAFaults()
		inj.inFlight.Store(true)
		d.logf("%s: debug: tx descriptor %d armed with unmapped iova %#x", d.name, i, uint64(inj.hole))
		return
	}
	keep.Data.Release() // a queued packet always has a data descriptor
}

// isTxData reports whether d is an extended data descriptor, the only
// kind this driver writes that carries a buffer address.
func isTxData(d []byte) bool {
	const want = TXD_DTYP_DATA | uint32(TXD_CMD_DEXT)<<24
	return binary.LittleEndian.Uint32(d[8:])&(0xf<<20|uint32(TXD_CMD_DEXT)<<24) == want
}

// settleTx ends an injection once the device wrote its packet's last
// descriptor back. Neither the 82574 nor QEMU's model reports a refused
// buffer read in the descriptor: both set DD. The model drops the packet;
// QEMU sends it with zeros where the buffer was (its bounce buffer is
// filled from the unassigned region). Either way the packet did not leave
// as it was queued, so the driver sends its copy again; the fault count
// moving while the packet was in flight is what tells a DMA fault from a
// packet that went out. txMu is held.
func (q *queue) settleTx() {
	inj := &q.txInj
	if !inj.armed || !txDone(q.tx.Descs.At(inj.eop)) {
		return
	}
	inj.resend, inj.pkt = inj.pkt, nil
	q.endTxInject("sending the packet again")
}

// endTxInject accounts for the fault of the injection in flight and gives
// the hole back: the device is done with it (its packet was written back,
// or the transmitter is stopped). txMu is held.
func (q *queue) endTxInject(then string) {
	d, inj := q.d, &q.txInj
	// Read after the write-back: the fault is recorded before it.
	faults := d.dma.(ring.FaultCounter).DMAFaults()
	if faults > inj.faults {
		inj.owned.Add(1)
		inj.faulted.Add(1)
		d.logf("%s: tx: dma fault on descriptor %d (faults %d, were %d): %s", d.name, inj.desc, faults, inj.faults, then)
	} else {
		d.logf("%s: tx: descriptor %d aimed at the hole came back with no fault recorded: %s", d.name, inj.desc, then)
	}
	inj.armed = false
	inj.inFlight.Store(false)
	if err := d.dma.(ring.Holer).ReleaseHole(inj.hole); err != nil {
		d.logf("%s: debug: %v", d.name, err)
		return // leaked, never reused: safer than a wrong free
	}
	inj.hole = 0
}

// resendTx queues the copy of a faulted packet again, after a reclaim
// made room; with the ring still full it waits for the next one. txMu is
// held.
func (q *queue) resendTx() {
	d, inj := q.d, &q.txInj
	p := inj.resend
	if p == nil {
		return
	}
	err := q.queuePacket(p)
	if errors.Is(err, ring.ErrTxFull) {
		return
	}
	inj.resend = nil
	if err != nil {
		p.Data.Release()
		q.tx.Stats.Drops.Add(1)
		d.logf("%s: tx: sending the faulted packet again: %v", d.name, err)
		return
	}
	d.regs.Write32(TDT, uint32(q.tx.Tail()))
	q.tx.Stats.Doorbells.Add(1)
	inj.resent.Add(1)
}

// resetTxInject is told the transmit ring is being reset with the
// transmitter stopped: an armed packet is dropped with the rest of the
// ring, its fault accounted for and the hole given back. txMu is held.
func (q *queue) resetTxInject() {
	inj := &q.txInj
	if !inj.armed {
		return
	}
	inj.pkt.Data.Release()
	inj.pkt = nil
	q.endTxInject("dropped with the ring")
}

// closeTxInject releases what an injection still holds when the device
// stops. txMu is held.
func (q *queue) closeTxInject() error {
	inj := &q.txInj
	for _, p := range []*nic.TxPacket{inj.pkt, inj.resend} {
		if p != nil {
			p.Data.Release()
		}
	}
	hole := inj.hole
	inj.pkt, inj.resend, inj.hole, inj.pending, inj.armed = nil, nil, 0, false, false
	inj.inFlight.Store(false)
	if h, ok := q.d.dma.(ring.Holer); ok && hole != 0 {
		return h.ReleaseHole(hole)
	}
	return nil
}

// rxFaultCount is the device's DMA fault count less the faults the
// transmit injection took as its own: the faults that may have spoilt a
// received frame. An injection in flight is settled first, so that its
// fault is not taken for the receive path's; a race the other way only
// costs the receive path a needless drop. rxMu is held (rxMu before txMu,
// as everywhere).
func (q *queue) rxFaultCount(fc ring.FaultCounter) uint64 {
	if q.txInj.inFlight.Load() {
		q.txMu.Lock()
		if !q.d.closed.Load() {
			q.settleTx()
		}
		q.txMu.Unlock()
	}
	owned := q.txInj.owned.Load() // before the count: never above it
	return fc.DMAFaults() - owned
}
