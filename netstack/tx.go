package netstack

import (
	"time"

	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// WritePackets implements stack.LinkWriter. The batch goes to one queue,
// chosen by the first packet's flow hash, as one Transmit call (the driver
// rings its doorbell once). A full ring is met with reclaim and retry for
// up to TxTimeout; what still does not fit is dropped and counted, so a
// stuck device never blocks the stack.
func (e *Endpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	list := pkts.AsSlice()
	if len(list) == 0 {
		return 0, nil
	}
	if !e.Link().Up {
		e.stats.txLinkDown.Add(uint64(len(list)))
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	q := e.queues[int(list[0].Hash%uint32(len(e.queues)))]

	batch := make([]*nic.TxPacket, len(list))
	for i, pkt := range list {
		batch[i] = txPacket(pkt)
		if batch[i].GSO != nic.GSONone {
			e.stats.txGSO.Add(1)
		}
	}
	if e.capture.On() {
		// Before the driver owns the data.
		for _, p := range batch {
			e.capture.Add(&p.Data)
		}
	}

	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		release(batch)
		return 0, &tcpip.ErrClosedForSend{}
	}
	sent, bytes := e.transmit(q, batch)
	q.mu.Unlock()
	e.stats.txBatches.Add(1)
	e.stats.txPackets.Add(uint64(sent))
	e.stats.txBytes.Add(bytes)
	if sent < len(batch) {
		e.stats.txDropped.Add(uint64(len(batch) - sent))
		if sent == 0 {
			return 0, &tcpip.ErrNoBufferSpace{}
		}
	}
	return sent, nil
}

// transmit pushes batch into q's ring, reclaiming and backing off while it
// is full, and returns how many packets the driver took. A packet the
// driver refuses with an error is dropped on its own and the rest still
// go. Every packet not taken is released here. It returns the packets and
// bytes taken. q.mu is held.
func (e *Endpoint) transmit(q *queue, batch []*nic.TxPacket) (taken int, bytes uint64) {
	// Sizes are read before the driver owns the data.
	sizes := make([]int64, len(batch))
	for i, p := range batch {
		sizes[i] = p.Data.Size()
	}
	var (
		backoff  = e.opt.MinWait
		deadline time.Time
	)
	// What the device finished since the last batch is freed first, by
	// the sender: on a multi-queue NIC the queue a flow transmits on may
	// receive nothing, and its poll loop, asleep on the interrupt, would
	// reclaim only once a second; the ring would fill and every batch
	// wait. Reading the done bits costs little beside a full ring's
	// back-off.
	q.q.Reclaim()
	for len(batch) > 0 {
		n, err := q.q.Transmit(batch)
		if n < 0 || n > len(batch) {
			e.stats.txErrors.Add(1)
			e.opt.Logf("%s: transmit claims %d of %d packets", e.nic.Name(), n, len(batch))
			break // ownership unknown: neither release nor reuse
		}
		taken += n
		for _, sz := range sizes[:n] {
			bytes += uint64(sz)
		}
		batch, sizes = batch[n:], sizes[n:]
		if err != nil {
			// The driver refused batch[0]: drop that one alone.
			e.stats.txErrors.Add(1)
			if len(batch) > 0 {
				release(batch[:1])
				batch, sizes = batch[1:], sizes[1:]
			}
			continue
		}
		if len(batch) == 0 || n > 0 {
			continue
		}
		e.stats.txRingFull.Add(1)
		if q.q.Reclaim() > 0 {
			continue
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(e.opt.TxTimeout)
		} else if now.After(deadline) {
			release(batch)
			break
		}
		time.Sleep(backoff)
		if backoff *= 2; backoff > e.opt.MaxWait {
			backoff = e.opt.MaxWait
		}
	}
	return taken, bytes
}

// txPacket describes pkt to the driver. The data is pkt's own views with
// new references (no copy); checksum and segmentation requests come from
// the GSO options TCP attached.
func txPacket(pkt *stack.PacketBuffer) *nic.TxPacket {
	tp := &nic.TxPacket{Data: pkt.ToBuffer()}
	g := pkt.GSOOptions
	var gso nic.GSOType
	switch g.Type {
	case stack.GSOTCPv4:
		gso = nic.GSOTCPv4
	case stack.GSOTCPv6:
		gso = nic.GSOTCPv6
	default:
		return tp // none, or gVisor's own segments: complete frames
	}
	l2 := len(pkt.LinkHeader().Slice())
	l3 := len(pkt.NetworkHeader().Slice())
	l4 := len(pkt.TransportHeader().Slice())
	tp.L3Len = uint16(l3)
	tp.L4Len = uint16(l4)
	if g.NeedsCsum {
		tp.NeedsCsum = true
		tp.CsumStart = uint16(l2 + l3)
		tp.CsumOffset = g.CsumOffset
	}
	if g.MSS > 0 && pkt.Data().Size() > int(g.MSS) {
		tp.GSO = gso
		tp.MSS = g.MSS
	}
	return tp
}

// release frees the data of packets the driver did not take.
func release(pkts []*nic.TxPacket) {
	for _, p := range pkts {
		p.Data.Release()
	}
}
