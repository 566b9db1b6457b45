package mi225

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// newDeferRig is newRig with the model's packet buffer on.
func newDeferRig(t testing.TB, kib int) *rig {
	t.Helper()
	return plugRig(t, Options{Device: 0x125c, MAC: ourMAC, DeferRx: true, RxBufferKiB: kib})
}

func TestDeferRxWaitsForTheDriver(t *testing.T) {
	r := newDeferRig(t, 4)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
	f := udpFrame(false, ourMAC, payloadBytes(1000, 1), true)
	for range 9 {
		r.Wire.B().Send(f)
	}
	// 4 KiB hold three of these frames; the rest are missed.
	if r.nic.Counters().RxFrames != 0 {
		t.Fatal("a frame reached the ring before the driver touched the device")
	}
	if v := r.Regs.Read32(ICR); v&nicmodel.IntRXO == 0 {
		t.Fatalf("ICR %#x, want RXO for the missed frames", v)
	}
	if v := r.Regs.Read32(nicmodel.MPC); v != 6 {
		t.Fatalf("MPC %d, want 6", v)
	}
	r.Regs.Read32(nicmodel.EICR)
	if c := r.nic.Counters(); c.RxFrames != 0 {
		t.Fatal("reading the interrupt causes wrote a ring")
	}
	r.Regs.Read32(RDH) // the queue's own register moves its frames
	if c := r.nic.Counters(); c.RxFrames != 3 {
		t.Fatalf("%d frames in the ring after a register read, want 3", c.RxFrames)
	}
	if !bytes.Equal(r.rxBuf(0, 2, len(f)), f) {
		t.Fatal("third frame not in slot 2")
	}
}

func TestDeferRxHoldsAFrameUntilDescriptorsReturn(t *testing.T) {
	r := newDeferRig(t, 64)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
	for i := range 10 {
		r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(100+i, byte(i)), true))
	}
	r.Regs.Read32(nicmodel.STATUS)
	if r.nic.Counters().RxFrames != 0 {
		t.Fatal("a STATUS read moved frames")
	}
	r.Regs.Read32(RDH)
	if c := r.nic.Counters(); c.RxFrames != 7 || c.RxNoDescriptor != 0 {
		t.Fatalf("counters %+v, want 7 frames and nothing dropped", c)
	}
	r.Regs.Read32(RDT) // a second look does not count the waiting frame again
	if v := r.Regs.Read32(nicmodel.RNBC); v != 1 {
		t.Fatalf("RNBC %d, want 1 for the frame waiting at the head", v)
	}
	// The driver takes three and gives their slots back.
	for i := range 3 {
		r.armRx(0, i)
	}
	r.Regs.Write32(RDT, 2)
	if c := r.nic.Counters(); c.RxFrames != 10 {
		t.Fatalf("%d frames after RDT moved, want 10", c.RxFrames)
	}
	want := udpFrame(false, ourMAC, payloadBytes(109, 9), true)
	if !bytes.Equal(r.rxBuf(0, 1, len(want)), want) {
		t.Fatal("the last frame is not in slot 1")
	}
}

// TestConcurrentTraffic runs a sender, a polling driver and a transmitter
// at once over a deferred-receive model, for the race detector; every
// frame arrives, in order.
func TestConcurrentTraffic(t *testing.T) {
	const size, frames = 64, 3000
	r := newDeferRig(t, 4096) // room for every frame: none is missed
	r.setupRx(0, size, 2048, SrrctlDescAdvOne, rctlStd)
	r.setupTx(1, 64)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the far end
		defer wg.Done()
		for i := range frames {
			r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(64+i%900, byte(i)), true))
			if i%64 == 0 {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}()
	go func() { // a second driver thread, transmitting and reading statistics
		defer wg.Done()
		for i := range 200 {
			r.send(1, udpFrame(false, peerMAC, payloadBytes(100, byte(i)), true), nil, 0, 0)
			r.kickTx(1)
			r.Regs.Read32(nicmodel.GPTC)
		}
	}()
	// The receiving driver: poll the head descriptor after reading its
	// queue's head, take frames in order, re-arm and return them.
	next, got := 0, 0
	deadline := time.Now().Add(20 * time.Second)
	for got < frames && time.Now().Before(deadline) {
		r.Regs.Read32(RDH)
		for {
			wb := r.rxDesc(0, next)
			if wb.status&RxdStaDD == 0 {
				break
			}
			want := 64 + got%900 + 42
			if wb.len() != want {
				t.Fatalf("frame %d: length %d, want %d", got, wb.len(), want)
			}
			r.armRx(0, next)
			r.Regs.Write32(RDT, uint32(next))
			next = (next + 1) % size
			got++
		}
	}
	wg.Wait()
	c := r.nic.Counters()
	if got != frames || c.RxNoDescriptor != 0 {
		t.Fatalf("received %d, dropped %d, of %d", got, c.RxNoDescriptor, frames)
	}
	if c.TxFrames != 200 {
		t.Fatalf("transmitted %d, want 200", c.TxFrames)
	}
}

// With DeferTx a TDT write only records the tail: the queue's descriptors
// are processed, TxPerTouch at a time, when the driver next touches the
// queue's transmit registers or arms the vector of its transmit cause,
// and each buffer is read then, not at the doorbell.
func TestDeferTxWaitsForTheDriver(t *testing.T) {
	if _, err := New(Options{DeferTx: true, TxPerTouch: -1}, nopDMA{}, nopIRQ{}); err == nil {
		t.Error("a negative TxPerTouch was accepted")
	}
	r := plugRig(t, Options{Device: 0x125c, MAC: ourMAC, DeferTx: true, TxPerTouch: 2})
	r.setupTx(0, 16)
	r.setupTx(1, 16)
	r.Regs.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX)
	r.Regs.Write32(nicmodel.IVAR0, nicmodel.IvarValid|0|(nicmodel.IvarValid|1)<<8) // queue 0: RX vector 0, TX vector 1
	var frames [][]byte
	queue := func(seed byte) {
		f := udpFrame(false, peerMAC, payloadBytes(100, seed), true)
		frames = append(frames, f)
		r.send(0, f, nil, 0, 0)
	}
	for i := range 4 {
		queue(byte(i))
	}
	var wire [][]byte
	onWire := func() int { wire = append(wire, r.sent()...); return len(wire) }
	r.kickTx(0)
	if n := onWire(); n != 0 || r.txStatus(0, 0)&TxdStaDD != 0 {
		t.Fatalf("%d frames sent at the doorbell, DD %v", n, r.txStatus(0, 0)&TxdStaDD != 0)
	}
	for _, off := range []uint32{nicmodel.STATUS, nicmodel.EICR, ICR, nicmodel.GPTC, TxQ(TDH, 1), RxQ(RDH, 0)} {
		r.Regs.Read32(off)
	}
	r.Regs.Write32(nicmodel.EIMS, 1<<0) // the queue's receive vector
	if n := onWire(); n != 0 {
		t.Fatalf("%d frames sent for registers that are not the queue's transmit path", n)
	}

	if h := r.Regs.Read32(TxQ(TDH, 0)); h != 2 {
		t.Fatalf("TDH %d after one touch, want 2", h)
	}
	if n := onWire(); n != 2 || r.txStatus(0, 1)&TxdStaDD == 0 || r.txStatus(0, 2)&TxdStaDD != 0 {
		t.Fatalf("%d frames sent, DD of descriptors 1 and 2 %v %v: want 2, true, false",
			n, r.txStatus(0, 1)&TxdStaDD != 0, r.txStatus(0, 2)&TxdStaDD != 0)
	}
	// The driver rewrites a buffer the device has not read: its new bytes
	// go out.
	frames[3] = udpFrame(false, peerMAC, payloadBytes(100, 0x77), true)
	r.txBuf(0, 3, frames[3])
	// The next doorbell processes what was handed over before it.
	queue(4)
	r.kickTx(0)
	if c := r.nic.Counters(); c.TxPackets != 4 {
		t.Fatalf("%d packets taken after the second doorbell, want 4", c.TxPackets)
	}
	// The poll loop's re-arm of the transmit vector takes the last one,
	// and its completion fires the vector.
	before := r.M.IRQ(nicAddr).Raised()
	r.Regs.Write32(nicmodel.EIMS, 1<<1)
	if c := r.nic.Counters(); c.TxPackets != 5 || c.Vectors[1] == 0 || r.M.IRQ(nicAddr).Raised() == before {
		t.Fatalf("after the re-arm: %d packets taken, vector 1 fired %d times: want 5 and a message", c.TxPackets, c.Vectors[1])
	}
	if n := onWire(); n != len(frames) {
		t.Fatalf("%d frames on the wire, want %d", n, len(frames))
	}
	for i, f := range wire {
		if !bytes.Equal(f, frames[i]) {
			t.Errorf("frame %d on the wire is not the one queued (its buffer as the device read it)", i)
		}
	}
}
