package igb

import (
	"fmt"

	"github.com/ether9/ether9/drivers/nic"
)

// Transmit implements nic.Queue. Packets are queued in order until the
// ring is full; the tail is written once for the batch. A malformed packet
// stops the batch with an error and is not taken.
func (q *queue) Transmit(pkts []*nic.TxPacket) (int, error) {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	if q.stopped {
		return 0, fmt.Errorf("igb %s: transmit on closed queue %d", q.d.name, q.idx)
	}
	taken, err := q.txq.Send(pkts)
	if err != nil {
		return taken, fmt.Errorf("igb %s: queue %d: %w", q.d.name, q.idx, err)
	}
	return taken, nil
}

// sendCopy queues one frame copied into bounce space (a program's TX
// verdict, a copy-mode socket's send); txMu is held and the caller
// flushes.
func (q *queue) sendCopy(frame []byte) bool {
	if q.stopped {
		q.tx.Stats.Drops.Add(1)
		return false
	}
	return q.txq.SendCopy(frame)
}

// Reclaim implements nic.Queue.
func (q *queue) Reclaim() int {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	return q.reclaim()
}

// reclaim frees completed descriptors; a zero-copy frame goes back to its
// socket's completion ring. txMu is held.
func (q *queue) reclaim() int {
	if q.stopped {
		return 0
	}
	n, err := q.txq.Reclaim(q.x.Complete)
	if err != nil {
		q.d.logf("%s: queue %d: tx reclaim: %v", q.d.name, q.idx, err)
	}
	return n
}
