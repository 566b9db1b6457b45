package e1000e

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ether9/ether9/drivers/intr"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/drivers/ring"
)

// queue is the controller's one RX/TX queue pair: its rings, their locks
// and what the receive and transmit paths count and inject on them. The
// registers and what the whole function shares (MTU, TSO, the receive
// filter, closed) are the Device's, reached through d. Lock order: rxMu,
// txMu.
type queue struct {
	d *Device

	rx        *ring.RxRing
	rxDiscard bool // inside a frame that spans buffers
	rxGuard   ring.FaultGuard
	inject    ring.RxInject // debug inject-unmapped-rx
	rxMu      sync.Mutex    // the RX ring, its pointer and rxRetired
	rxRetired retired
	// rxReconfigDrops counts frames lost to a ring change or reset.
	rxReconfigDrops atomic.Uint64

	tx        *ring.TxRing
	txMu      sync.Mutex // the TX ring, its pointer and txRetired
	txRetired retired
	txInj     txInject     // debug inject-unmapped-tx
	txSplit   ring.TxSplit // how data is cut: copied up to txCopyMax

	irqStats intr.QueueStats // the queue's sleeps by how they ended
}

var _ nic.Queue = (*queue)(nil)
var _ nic.RxReadier = (*queue)(nil)

// openQueue allocates the queue's rings and sets the copybreak it starts
// with; on failure nothing stays allocated.
func (d *Device) openQueue() error {
	q := &d.q
	q.d = d
	q.txSplit = ring.TxSplit{CopyMax: txCopyMax, MaxPerDesc: maxPerTxd}
	var err error
	if q.rx, err = ring.NewRxRing(d.dma, rxDescs, descSize, rxBufSize); err != nil {
		return fmt.Errorf("e1000e %s: %w", d.name, err)
	}
	if q.tx, err = ring.NewTxRing(d.dma, txDescs, descSize, txBounceLen); err != nil {
		q.rx.Close()
		return fmt.Errorf("e1000e %s: %w", d.name, err)
	}
	q.rxGuard = ring.NewFaultGuard(d.dma, d.name, d.logf)
	d.startCopybreak()
	return nil
}

// setupRx programs and arms the RX ring and enables the receiver; rxMu
// is held.
func (q *queue) setupRx() {
	d, r := q.d, q.d.regs
	r.Write32(RCTL, 0)
	q.rx.Descs.Program(r, RDBAL)
	r.Write32(RDTR, 0)
	r.Write32(RADV, 0)
	r.Write32(RFCTL, r.Read32(RFCTL)|RFCTL_EXSTEN)
	r.Write32(RXCSUM, RXCSUM_IPOFL|RXCSUM_TUOFL)
	q.rx.Reset()
	q.rxDiscard = false
	q.rx.Refill(q.writeRx)
	tail := q.rx.Tail()
	d.filterMu.Lock()
	d.rxStopped = false
	d.rctl = RCTL_EN | RCTL_BAM | RCTL_SECRC | RCTL_SZ_2048 | RCTL_RDMTS_HF | RCTL_MO_47_36
	r.Write32(RCTL, d.rctlFor(int(d.mtu.Load())))
	d.filterMu.Unlock()
	r.Write32(RDT, uint32(tail))
}

// setupTx programs the TX ring, dropping whatever it held; txMu is held.
func (q *queue) setupTx() {
	d, r := q.d, q.d.regs
	r.Write32(TCTL, 0)
	q.tx.Descs.Program(r, TDBAL)
	r.Write32(TIPG, tipgCopper)
	r.Write32(TIDV, 0)
	r.Write32(TADV, 0)
	r.Write32(TXDCTL, TXDCTL_GRAN|TXDCTL_WTHRESH_1|TXDCTL_COUNT_DESC)
	q.resetTxInject()
	if err := q.tx.Reset(); err != nil {
		d.logf("%s: tx ring reset: %v", d.name, err)
	}
	r.Write32(TCTL, TCTL_EN|TCTL_PSP|tctlCT<<TCTL_CT_SHIFT|tctlCOLD<<TCTL_COLD_SHIFT|TCTL_RTLC|TCTL_MULR)
}

// close frees the rings and whatever an injection still holds, once the
// device is closed and its DMA has landed.
func (q *queue) close() error {
	q.rxMu.Lock()
	errRx := errors.Join(q.rx.Close(), q.inject.Close())
	q.rxMu.Unlock()
	q.txMu.Lock()
	errTx := errors.Join(q.tx.Close(), q.closeTxInject())
	q.txMu.Unlock()
	return errors.Join(errRx, errTx)
}
