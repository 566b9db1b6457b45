package mi225

import (
	"bytes"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
)

// msixRig puts the model in MSI-X mode with auto-mask on (GPIE) and RX
// queues 0 and 1 ready; IVAR is left to the test.
func msixRig(t *testing.T, opt Options) *rig {
	t.Helper()
	r := plugRig(t, opt)
	r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
	r.setupRx(1, 8, 2048, SrrctlDescAdvOne, rctlStd)
	r.Regs.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX|nicmodel.GpieEIAME|nicmodel.GpiePBA|nicmodel.GpieNSICR)
	r.Regs.Write32(ETQF, etqfFilter(etherTypeTest, 1, EtqfFilterEnable|EtqfQueueEnable))
	r.Regs.Read32(ICR) // the LSC of attaching
	return r
}

// An IVAR entry routes its queue's cause only while its valid bit is set;
// queue 1's RX entry is byte 2 of IVAR(0), its TX entry byte 3.
func TestIVARValidBit(t *testing.T) {
	r := msixRig(t, Options{Device: 0x15f3, MAC: ourMAC})
	g := r.Regs
	g.Write32(nicmodel.IVAR0, 2<<16) // queue 1 RX on vector 2, not valid
	r.Wire.B().Send(experimental(ourMAC))
	if c := r.nic.Counters(); c.RxQueueFrames[1] != 1 {
		t.Fatalf("queue frames %v, want one on queue 1", c.RxQueueFrames)
	}
	if v := g.Read32(nicmodel.EICR); v != 0 {
		t.Fatalf("EICR %#x from an entry without its valid bit", v)
	}
	g.Write32(nicmodel.IVAR0, (nicmodel.IvarValid|2)<<16)
	r.Wire.B().Send(experimental(ourMAC))
	if v := g.Read32(nicmodel.EICR); v != 1<<2 {
		t.Fatalf("EICR %#x, want vector 2", v)
	}
	g.Write32(nicmodel.EICR, 1<<2)
	// Queue 0's entries (bits 15:0) do not name queue 1's vector.
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|3|(nicmodel.IvarValid|4)<<8)
	r.Wire.B().Send(experimental(ourMAC))
	if v := g.Read32(nicmodel.EICR); v != 0 {
		t.Fatalf("EICR %#x: queue 1's cause went to queue 0's vector", v)
	}

	// In MSI and INTx mode the entry names an EICR bit 3:0 and the cause
	// also latches in ICR.
	g.Write32(nicmodel.GPIE, 0)
	g.Write32(nicmodel.IVAR0, (nicmodel.IvarValid|2)<<16)
	g.Write32(nicmodel.EIMS, 1<<2)
	r.Wire.B().Send(experimental(ourMAC))
	if v := g.Read32(nicmodel.EICR); v != 1<<2 {
		t.Fatalf("EICR %#x in MSI mode, want bit 2", v)
	}
	if v := g.Read32(ICR); v&nicmodel.IntRXT0 == 0 {
		t.Fatalf("ICR %#x in MSI mode, want RXT0", v)
	}
}

// A vector fires once per arming: EIAC clears its cause and EIAM, with
// GPIE.EIAME, masks it as it fires; a cause that comes while it is
// masked waits and fires when software writes EIMS again.
func TestMSIXAutoClearAutoMask(t *testing.T) {
	r := msixRig(t, Options{Device: 0x15f3, MAC: ourMAC})
	g := r.Regs
	f := udpFrame(false, ourMAC, payloadBytes(64, 1), true)
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|2) // queue 0 RX on vector 2
	g.Write32(nicmodel.EIAC, 1<<2)
	g.Write32(nicmodel.EIAM, 1<<2)
	g.Write32(nicmodel.EIMS, 1<<2)
	irq := r.M.IRQ(nicAddr)
	before := irq.Raised()
	r.Wire.B().Send(f)
	if c := r.nic.Counters(); c.Vectors[2] != 1 || irq.Raised() != before+1 {
		t.Fatalf("vectors %v, %d raises, want one message on vector 2", c.Vectors, irq.Raised()-before)
	}
	if v := g.Read32(nicmodel.EIMS); v&(1<<2) != 0 {
		t.Fatalf("EIMS %#x: vector 2 not auto-masked", v)
	}
	if v := g.Read32(nicmodel.EICR); v&(1<<2) != 0 {
		t.Fatalf("EICR %#x: vector 2 not auto-cleared", v)
	}
	r.Wire.B().Send(f)
	if c := r.nic.Counters(); c.Vectors[2] != 1 {
		t.Fatal("a masked vector fired")
	}
	if v := g.Read32(nicmodel.EICR); v&(1<<2) == 0 {
		t.Fatalf("EICR %#x: the cause that came while masked was not latched", v)
	}
	g.Write32(nicmodel.EIMS, 1<<2) // re-arm: the waiting cause fires now, once
	if c := r.nic.Counters(); c.Vectors[2] != 2 {
		t.Fatalf("vectors %v: the waiting cause did not fire at the re-arm", c.Vectors)
	}
	g.Write32(nicmodel.EIMS, 1<<2)
	if c := r.nic.Counters(); c.Vectors[2] != 2 {
		t.Fatal("an auto-cleared cause fired again")
	}

	// Without GPIE.EIAME, EIAM masks nothing; without EIAC the cause stays
	// set until written to clear, and fires at every arming.
	g.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX)
	g.Write32(nicmodel.EIAC, 0)
	r.Wire.B().Send(f)
	if v := g.Read32(nicmodel.EIMS); v&(1<<2) == 0 {
		t.Fatalf("EIMS %#x: masked without GPIE.EIAME", v)
	}
	g.Write32(nicmodel.EIMC, 1<<2)
	g.Write32(nicmodel.EIMS, 1<<2)
	if c := r.nic.Counters(); c.Vectors[2] != 4 {
		t.Fatalf("vectors %v: a cause EIAC does not clear should fire again when armed", c.Vectors)
	}
	g.Write32(nicmodel.EICR, 1<<2)
	g.Write32(nicmodel.EIMC, 1<<2)
	g.Write32(nicmodel.EIMS, 1<<2)
	if c := r.nic.Counters(); c.Vectors[2] != 4 {
		t.Fatal("a cause cleared through EICR fired")
	}
}

// The other causes go to the vector in IVAR_MISC bits 15:8; bits 7:0
// (the TCP timer's entry) route nothing.
func TestOtherCausesVector(t *testing.T) {
	r := msixRig(t, Options{Device: 0x15f3, MAC: ourMAC})
	g := r.Regs
	g.Write32(IMS, nicmodel.IntLSC)
	g.Write32(nicmodel.EIMS, 0x1f)
	g.Write32(nicmodel.IVAR_MISC, nicmodel.IvarValid|3)
	g.Write32(ICS, nicmodel.IntLSC)
	if c := r.nic.Counters(); c.Vectors != [msixVectors]uint64{} {
		t.Fatalf("vectors %v: the TCP timer entry routed LSC", c.Vectors)
	}
	g.Read32(ICR)
	g.Write32(nicmodel.IVAR_MISC, (nicmodel.IvarValid|3)<<8)
	g.Write32(ICS, nicmodel.IntLSC)
	if c := r.nic.Counters(); c.Vectors[3] != 1 {
		t.Fatalf("vectors %v, want LSC on vector 3", c.Vectors)
	}
}

// With DeferRx a frame waits in its queue's line until that queue's
// vector is armed (or its ring registers are touched). Interrupt-cause
// registers never write a ring, and arming one queue's vector lands only
// that queue's frames.
func TestDeferRxArmDrainsOnlyItsQueue(t *testing.T) {
	r := msixRig(t, Options{Device: 0x15f3, MAC: ourMAC, DeferRx: true})
	g := r.Regs
	irq := r.M.IRQ(nicAddr)
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|0|(nicmodel.IvarValid|1)<<16) // queue n RX on vector n
	g.Write32(nicmodel.EIAC, 3)
	g.Write32(nicmodel.EIAM, 3)
	g.Write32(IMS, nicmodel.IntLSC)

	f := udpFrame(false, ourMAC, payloadBytes(64, 1), true) // queue 0
	h := experimental(ourMAC)                               // queue 1, by ETQF
	before := irq.Raised()
	r.Wire.B().Send(f)
	r.Wire.B().Send(h)
	if irq.Raised() != before {
		t.Error("frames for masked vectors raised the line")
	}
	g.Read32(ICR)
	g.Read32(nicmodel.EICR)
	g.Write32(ICS, nicmodel.IntLSC)
	g.Write32(nicmodel.EICS, 1<<4)
	g.Write32(IMS, nicmodel.IntRXT0)
	g.Write32(nicmodel.EIMS, 1<<3) // a vector no queue is on
	if c := r.nic.Counters(); c.RxFrames != 0 {
		t.Fatal("an interrupt register wrote a ring")
	}

	before = irq.Raised()
	g.Write32(nicmodel.EIMS, 1<<1)
	c := r.nic.Counters()
	if c.RxQueueFrames[1] != 1 || c.RxQueueFrames[0] != 0 {
		t.Fatalf("queue frames %v after arming vector 1, want queue 1's frame alone", c.RxQueueFrames)
	}
	if !bytes.Equal(r.rxBuf(1, 0, len(h)), h) {
		t.Fatal("queue 1's frame is not in its ring")
	}
	if c.Vectors[1] != 1 || irq.Raised() == before {
		t.Fatalf("vectors %v: the landed frame did not fire vector 1", c.Vectors)
	}
	if v := g.Read32(nicmodel.EIMS); v&(1<<1) != 0 {
		t.Fatalf("EIMS %#x: vector 1 not auto-masked after firing", v)
	}

	g.Write32(nicmodel.IVAR0, (nicmodel.IvarValid|1)<<16) // queue 0's entry no longer valid
	g.Write32(nicmodel.EIMS, 1<<0)
	if c := r.nic.Counters(); c.RxQueueFrames[0] != 0 {
		t.Fatal("an invalid IVAR entry still tied queue 0 to vector 0")
	}
	g.Write32(nicmodel.IVAR0, nicmodel.IvarValid|0|(nicmodel.IvarValid|1)<<16)
	g.Write32(nicmodel.EIMC, 1<<0)
	g.Write32(nicmodel.EIMS, 1<<0)
	if c := r.nic.Counters(); c.RxQueueFrames[0] != 1 || c.Vectors[0] != 1 {
		t.Fatalf("queue frames %v, vectors %v: queue 0's frame did not land and fire when armed", c.RxQueueFrames, c.Vectors)
	}

	// Armed and idle, a queue's vector wakes the driver for a frame that
	// arrives, without a message: the frame waits for the driver.
	g.Write32(nicmodel.EIMS, 1<<0)
	before = irq.Raised()
	r.Wire.B().Send(f)
	if irq.Raised() != before+1 {
		t.Fatal("a frame for an armed queue did not raise the line")
	}
	if c := r.nic.Counters(); c.RxQueueFrames[0] != 1 || c.Vectors[0] != 1 {
		t.Fatalf("queue frames %v, vectors %v: the frame landed before the driver looked", c.RxQueueFrames, c.Vectors)
	}
	g.Read32(RxQ(RDT, 1)) // another queue's register
	if c := r.nic.Counters(); c.RxQueueFrames[0] != 1 {
		t.Fatal("queue 1's register moved queue 0's frame")
	}
	g.Read32(RxQ(RDH, 0))
	if c := r.nic.Counters(); c.RxQueueFrames[0] != 2 {
		t.Fatal("queue 0's RDH did not move its frame")
	}
}

// With RSS on and DeferRx every frame is steered as it arrives: each
// queue's frames wait in its own line, in order, and draining one queue
// writes that queue's ring alone.
func TestDeferRxRSSLines(t *testing.T) {
	r := plugRig(t, Options{Device: 0x15f3, MAC: ourMAC, DeferRx: true})
	g := r.Regs
	for i := range 32 {
		g.Write32(nicmodel.RETA+4*uint32(i), 0x03020100)
	}
	for i := range 10 {
		g.Write32(nicmodel.RSSRK+4*uint32(i), 0x6d5a56da)
	}
	g.Write32(nicmodel.MRQC, MrqcEnableRSS|nicmodel.MrqcUDPIPv4|nicmodel.MrqcIPv4)
	g.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|nicmodel.RxcsumPCSD)
	for q := range Queues {
		r.setupRx(q, 64, 2048, SrrctlDescAdvOne, rctlStd)
	}
	const frames = 48
	sent := make([][]byte, frames)
	for i := range frames {
		sent[i] = nicmodeltest.Packet{Dst: ourMAC, Src: peerMAC, SrcPort: uint16(1000 + 7*i), DstPort: 53, Payload: payloadBytes(32+i, byte(i))}.UDP()
		r.Wire.B().Send(sent[i])
	}
	if c := r.nic.Counters(); c.RxFrames != 0 {
		t.Fatal("a frame reached a ring before the driver looked")
	}
	busy := 0
	got := 0
	for q := range Queues {
		before := r.nic.Counters().RxQueueFrames
		g.Read32(RxQ(RDH, q))
		after := r.nic.Counters().RxQueueFrames
		for o := range Queues {
			if o != q && after[o] != before[o] {
				t.Fatalf("reading queue %d's RDH wrote queue %d's ring", q, o)
			}
		}
		n := int(after[q])
		if n > 0 {
			busy++
		}
		// The queue's ring holds its frames in arrival order, each with
		// the hash that picked the queue.
		slot := 0
		for _, f := range sent {
			if slot == n {
				break
			}
			wb := r.rxDesc(q, slot)
			if wb.len() != len(f) || !bytes.Equal(r.rxBuf(q, slot, len(f)), f) {
				continue // another queue's frame
			}
			if int(wb.dw1&0x7f)%4 != q {
				t.Errorf("queue %d slot %d: hash %#x names queue %d", q, slot, wb.dw1, wb.dw1&0x7f%4)
			}
			slot++
		}
		if slot != n {
			t.Errorf("queue %d: %d of its %d frames found in order", q, slot, n)
		}
		got += n
	}
	if got != frames {
		t.Fatalf("%d frames in the rings, want %d", got, frames)
	}
	if busy < 2 {
		t.Fatalf("RSS put every frame on %d queue(s)", busy)
	}
}
