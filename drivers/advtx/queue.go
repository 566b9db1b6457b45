package advtx

import (
	"github.com/ether9/ether9/drivers/advdesc"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
)

// Queue is one transmit queue of advanced descriptors: the Writer over
// its ring and the tail register its doorbell writes. Callers serialise
// its use as they serialise the ring's.
type Queue struct {
	Writer
	Regs  kernel.Regs
	TDT   uint32 // the queue's tail register
	Dirty bool   // descriptors queued since the last doorbell
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
	if r.Free() == 0 {
		return 0, false
	}
	r.Begin()
	i := r.Claim()
	advdesc.EncodeData(r.Descs.At(i), uint64(addr), n, advdesc.TXD_DCMD_IFCS|advdesc.TXD_DCMD_EOP|advdesc.TXD_DCMD_RS, 0, n)
	r.Commit(nil)
	r.Stats.Packets.Add(1)
	r.Stats.Frames.Add(1)
	r.Stats.Bytes.Add(uint64(n))
	t.Dirty = true
	return i, true
}

// Reclaim frees the descriptors the device completed, calling complete
// with each one's index (a zero-copy frame goes back to its socket).
func (t *Queue) Reclaim(complete func(i int)) (int, error) {
	return t.Ring.Reclaim(func(i int) bool {
		if !advdesc.TxDone(t.Ring.Descs.At(i)) {
			return false
		}
		complete(i)
		return true
	})
}
