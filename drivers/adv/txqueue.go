package adv

import (
	"fmt"
	"sync"

	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
)

// Queue is one transmit queue of advanced descriptors: the Writer over
// its ring and the tail register its doorbell writes. Callers serialise
// its use as they serialise the ring's.
type Queue struct {
	Writer
	Regs     kernel.Regs
	TDT      uint32      // the queue's tail register
	Name     string      // what errors and log lines call the queue
	Complete func(i int) // takes each completed descriptor's index (a zero-copy frame back to its socket)
	Logf     func(string, ...any)

	Mu     sync.Mutex // the queue's TX lock: held for everything below but Transmit and Reclaim
	Dirty  bool       // descriptors queued since the last doorbell
	Closed bool       // the queue was closed: nothing more is sent or reclaimed
}

// Transmit implements nic.Queue's transmit: packets are queued in order
// until the ring is full and the tail is written once for the batch. A
// malformed packet stops the batch with an error and is not taken.
func (t *Queue) Transmit(pkts []*nic.TxPacket) (int, error) {
	t.Mu.Lock()
	defer t.Mu.Unlock()
	if t.Closed {
		return 0, fmt.Errorf("%s: transmit on a closed queue", t.Name)
	}
	taken, err := t.Send(pkts)
	if err != nil {
		return taken, fmt.Errorf("%s: %w", t.Name, err)
	}
	return taken, nil
}

// Reset empties the ring after the device's queue was stopped; Mu is
// held.
func (t *Queue) Reset() error {
	t.Dirty = false
	if err := t.Ring.Reset(); err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	return nil
}

// Send queues packets in order until the ring is full and rings the
// doorbell once for those taken; Writer.Batch says what stops a batch.
func (t *Queue) Send(pkts []*nic.TxPacket) (int, error) {
	taken, err := t.Batch(pkts)
	if taken > 0 {
		t.Doorbell()
	}
	return taken, err
}

// Doorbell tells the device about the descriptors queued so far.
func (t *Queue) Doorbell() {
	t.Regs.Write32(t.TDT, uint32(t.Ring.Tail()))
	t.Ring.Stats.Doorbells.Add(1)
	t.Dirty = false
}

// Flush rings the doorbell if descriptors were queued since the last.
func (t *Queue) Flush() {
	if t.Dirty {
		t.Doorbell()
	}
}

// SendCopy queues one frame copied into bounce space (a program's TX
// verdict, a copy-mode socket's send) and reports whether it was taken;
// Flush rings the doorbell.
func (t *Queue) SendCopy(frame []byte) bool {
	if t.Closed {
		t.Ring.Stats.Drops.Add(1)
		return false
	}
	if !t.Copy(frame) {
		return false
	}
	t.Dirty = true
	return true
}

// SendFrame queues n bytes at addr, already mapped (a zero-copy socket's
// frame), as one data descriptor and returns its index for the
// completion; Flush rings the doorbell.
func (t *Queue) SendFrame(addr kernel.DMAAddr, n int) (int, bool) {
	r := t.Ring
	if t.Closed || r.Free() == 0 {
		return 0, false
	}
	r.Begin()
	i := r.Claim()
	EncodeData(r.Descs.At(i), uint64(addr), n, TXD_DCMD_IFCS|TXD_DCMD_EOP|TXD_DCMD_RS, 0, n)
	r.Commit(nil)
	r.Stats.Packets.Add(1)
	r.Stats.Frames.Add(1)
	r.Stats.Bytes.Add(uint64(n))
	t.Dirty = true
	return i, true
}

// Reclaim implements nic.Queue's reclaim: it frees the descriptors the
// device completed and returns how many.
func (t *Queue) Reclaim() int {
	t.Mu.Lock()
	defer t.Mu.Unlock()
	return t.ReclaimLocked()
}

// ReclaimLocked is Reclaim with Mu held. Each completed descriptor's index
// goes to Complete.
func (t *Queue) ReclaimLocked() int {
	if t.Closed {
		return 0
	}
	n, err := t.Ring.Reclaim(func(i int) bool {
		if !TxDone(t.Ring.Descs.At(i)) {
			return false
		}
		if t.Complete != nil {
			t.Complete(i)
		}
		return true
	})
	if err != nil && t.Logf != nil {
		t.Logf("%s: tx reclaim: %v", t.Name, err)
	}
	return n
}

// MaxTSO is the longest packet the TSO path takes, headers included: the
// largest IP packet.
const MaxTSO = 65535

// CopyMax is the Writer's copy limit for igb and igc: every packet, TSO
// payloads included, is copied into the ring's bounce space, mapped once
// when the ring was made. Mapping a packet instead costs a map and, in
// strict mode, an IOTLB invalidation at its unmap: in QEMU 1.9 maps per
// packet made igb's pull 0.4x e1000e's, which copied.
const CopyMax = MaxTSO

// Features is what the advanced descriptors offer the stack: checksum
// offload both ways and, while tso is on, TSO for IPv4 and IPv6 up to
// MaxTSO.
func Features(tso bool) nic.Features {
	f := nic.Features{RxChecksum: true, TxChecksum: true, TSOv4: tso, TSOv6: tso}
	if tso {
		f.MaxGSO = MaxTSO
	}
	return f
}
