package m82576

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// Behind VT-d with translation on, the model reaches exactly what the
// device's domain maps: frames flow through mapped rings and buffers, and
// a buffer unmapped behind the device's back faults instead of being
// written.
func TestBehindIOMMU(t *testing.T) {
	r := newRig(t)
	u, err := iommu.New(r.M.VTdRegs(), r.M.Mem, iommu.Options{Clock: r.M.Clock})
	if err != nil {
		t.Fatal(err)
	}
	dom, err := u.Domain(iommu.SourceID(0, 3, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	g := r.Regs
	const size = 8
	ring, err := dom.AllocCoherent(size * descLen)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([][]byte, size)
	addrs := make([]kernel.DMAAddr, size)
	for i := range size {
		bufs[i] = make([]byte, 2048)
		if addrs[i], err = dom.Map(bufs[i], kernel.FromDevice); err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint64(ring.Buf[i*descLen:], uint64(addrs[i]))
	}
	g.Write32(RDBAL, uint32(ring.Addr))
	g.Write32(RDBAH, uint32(uint64(ring.Addr)>>32))
	g.Write32(RDLEN, size*descLen)
	g.Write32(SRRCTL, 2|DescTypeAdvOneBuf<<SrrctlDescTypeSh)
	g.Write32(RDT, size-1)
	g.Write32(nicmodel.RCTL, nicmodel.RctlEN|nicmodel.RctlSECRC)

	f := udp4(srcIP4, dstIP4, 1, 2, []byte("through the IOMMU"))
	r.Inject(f)
	if err := dom.SyncForCPU(addrs[0], 2048, kernel.FromDevice); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bufs[0][:len(f)], f) || ring.Buf[8]&RxdDD == 0 {
		t.Fatalf("frame not in the mapped buffer (counters %+v)", r.nic.Counters())
	}
	if err := dom.Unmap(addrs[1], 2048, kernel.FromDevice); err != nil {
		t.Fatal(err)
	}
	r.Inject(f)
	if c := r.nic.Counters(); c.RxDMAFaults != 1 {
		t.Errorf("DMA faults %d, want 1", c.RxDMAFaults)
	}
	if len(u.Faults()) == 0 {
		t.Error("the IOMMU recorded no fault")
	}
	if bytes.Equal(bufs[1][:len(f)], f) {
		t.Error("the unmapped buffer was written")
	}
}

// Frames arrive on several queues while several queues transmit and
// software moves tails and reads statistics: run with -race.
func TestConcurrentQueues(t *testing.T) {
	r := newRig(t)
	const queues, frames = 4, 300
	for q := range uint32(queues) {
		r.setupRx(q, 64, 2048)
		r.setupTx(q, 64)
	}
	r.programRSS(nicmodel.MrqcUDPIPv4)
	r.programRETA(func(i uint32) uint32 { return i % queues })
	var wg sync.WaitGroup
	var mu sync.Mutex // the test's own ring bookkeeping
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range frames {
			r.Inject(udp4(srcIP4, dstIP4, uint16(i), 9, []byte("concurrent")))
			if i%8 == 0 {
				mu.Lock()
				for q := range uint32(queues) {
					for {
						if _, _, ok := r.takeRx(q); !ok {
							break
						}
					}
				}
				mu.Unlock()
			}
		}
	}()
	for q := range uint32(queues) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := udp4(dstIP4, srcIP4, 9, uint16(q), []byte("tx"))
			for range frames / 10 {
				mu.Lock()
				r.post(q, dataDesc(r.buf(q, f), len(f), TxdEOP|TxdRS, 0))
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			r.Regs.Read32(nicmodel.GPRC)
			r.Regs.Read32(nicmodel.STATUS)
		}
	}()
	wg.Wait()
	c := r.nic.Counters()
	if held := uint64(r.nic.pb.Len()); c.RxFrames+c.RxMissed+held != frames {
		t.Errorf("received %d + missed %d + held %d, want %d", c.RxFrames, c.RxMissed, held, frames)
	}
	if c.TxFrames != queues*frames/10 {
		t.Errorf("sent %d, want %d", c.TxFrames, queues*frames/10)
	}
}

// With DeferRx a frame waits in the packet buffer until the driver looks
// at its queue, and then lands on the driver's goroutine. The interrupt
// registers, and another queue's registers, leave it waiting.
func TestDeferRx(t *testing.T) {
	r := newRig(t)
	m := r.M
	n, err := New(Options{MAC: peerMAC, DeferRx: true}, m.Port(nicAddr), m.IRQ(nicAddr))
	if err != nil {
		t.Fatal(err)
	}
	r.nic = n
	r.Regs = n.Regs()
	n.Attach(r.Wire.A()) // replaces the plugged model on the wire
	r.Regs.Write32(nicmodel.CTRL, nicmodel.CtrlSLU)
	r.setupRx(0, 8, 2048)
	r.setupRx(1, 8, 2048)
	r.Regs.Write32(nicmodel.IMS, IntRXDW)
	const steered = 0x88b5
	r.Regs.Write32(ETQF0, steered|EtqfFilter|EtqfQueueEn|1<<EtqfQueueSh)

	f := udp4(srcIP4, dstIP4, 1, 2, []byte("later"))
	copy(f, peerMAC[:])
	g := make([]byte, 60)
	copy(g, peerMAC[:])
	g[12], g[13] = steered>>8, steered&0xff
	before := m.IRQ(nicAddr).Raised()
	r.Inject(f)
	r.Inject(g)
	if n.Counters().RxFrames != 0 || n.pbq[0].Len() != 1 || n.pbq[1].Len() != 1 {
		t.Fatalf("frames written before the driver looked: %+v", n.Counters())
	}
	if m.IRQ(nicAddr).Raised() == before {
		t.Error("no wake-up for a waiting frame")
	}
	for _, off := range []uint32{TDH, nicmodel.ICR, nicmodel.EICR, nicmodel.STATUS} {
		r.Regs.Read32(off)
	}
	r.Regs.Write32(nicmodel.IMS, IntRXDW)
	r.Regs.Write32(nicmodel.EIMS, 1)
	if n.Counters().RxFrames != 0 {
		t.Fatal("a transmit or interrupt register wrote a ring")
	}

	r.Regs.Read32(RDH) // queue 0 only
	if got, _, ok := r.takeRx(0); !ok || !bytes.Equal(got, f) {
		t.Error("queue 0's frame not delivered after its RDH read")
	}
	if n.pbq[1].Len() != 1 || n.Counters().RxQueue[1] != 0 {
		t.Error("queue 0's access wrote queue 1's ring")
	}
	if r.Regs.Read32(nicmodel.ICR)&IntRXDW == 0 {
		t.Error("no RXDW cause for the written frame")
	}
	r.Regs.Write32(RDT+queueSize, 7) // tail unchanged: still moves the waiting frame
	if got, wb, ok := r.takeRx(1); !ok || !bytes.Equal(got, g) || wb.info&PktL2 == 0 {
		t.Error("queue 1's frame not delivered after its RDT write")
	}
	if n.deferred.Load() != 0 {
		t.Errorf("%d bytes still counted as waiting", n.deferred.Load())
	}

	// A full buffer misses the frame and gives its room back.
	small, err := New(Options{MAC: peerMAC, DeferRx: true, RxBufferKiB: 1}, m.Port(nicAddr), m.IRQ(nicAddr))
	if err != nil {
		t.Fatal(err)
	}
	r.nic, r.Regs = small, small.Regs()
	small.Attach(r.Wire.A())
	r.Regs.Write32(nicmodel.CTRL, nicmodel.CtrlSLU)
	r.rx[0].next = 0
	r.setupRx(0, 8, 2048)
	big := make([]byte, 600)
	copy(big, f)
	r.Inject(big)
	r.Inject(big)
	if c := small.Counters(); c.RxMissed != 1 || small.pbq[0].Len() != 1 || small.deferred.Load() != 600 {
		t.Errorf("1 KiB buffer: missed %d, waiting %d (%d bytes), want 1, 1 (600)", c.RxMissed, small.pbq[0].Len(), small.deferred.Load())
	}
	r.Regs.Write32(RXDCTL, RxdctlEnable)
	if _, _, ok := r.takeRx(0); !ok || small.deferred.Load() != 0 {
		t.Error("the held frame was not delivered after an RXDCTL write")
	}

	if _, err := New(Options{RxBufferKiB: -1}, m.Port(nicAddr), m.IRQ(nicAddr)); err == nil {
		t.Error("negative packet buffer accepted")
	}
}
